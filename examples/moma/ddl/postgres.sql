-- MoMA's Artworks.json as a table: the artists as a list of constituent ids, dates as the catalogue writes them,
-- dimensions in centimetres with the collection's long fractions, and a string accession number beside the
-- integer object id.
CREATE TABLE artworks (
    object_id         integer         PRIMARY KEY,
    accession_number  varchar(32)     NOT NULL UNIQUE,
    title             text,
    constituent_ids   jsonb,
    date_text         varchar(64),
    medium            text,
    dimensions        text,
    height_cm         numeric(24,15),
    width_cm          numeric(24,15),
    depth_cm          numeric(24,15),
    weight_kg         numeric(24,15),
    department        varchar(64)     NOT NULL,
    classification    varchar(64),
    date_acquired     date,
    cataloged         boolean         NOT NULL DEFAULT false
);
