-- MoMA's Artists.json as a table: birth and death years are 0 when unknown.
CREATE TABLE artists (
    constituent_id  int           NOT NULL PRIMARY KEY,
    display_name    varchar(255)  NOT NULL,
    artist_bio      varchar(255),
    nationality     varchar(64),
    gender          varchar(32),
    begin_date      smallint      NOT NULL DEFAULT 0,
    end_date        smallint      NOT NULL DEFAULT 0,
    wiki_qid        varchar(16),
    ulan            varchar(16)
);
