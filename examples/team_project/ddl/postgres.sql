-- Accounts per tenant: a composite key of text and integer.
CREATE TABLE accounts (
    tenant       varchar(20)    NOT NULL,
    account_no   integer        NOT NULL,
    owner        text           NOT NULL,
    balance      numeric(38,10) NOT NULL DEFAULT 0,
    risk_score   numeric,
    profile      jsonb,
    external_id  uuid           NOT NULL,
    signature    bytea,
    lifetime_ops bigint,
    opened_at    timestamptz    NOT NULL,
    visits       bigint         DEFAULT 0,     -- nullable with a default: an explicit NULL must stay NULL
    verified     boolean        DEFAULT true,
    PRIMARY KEY (tenant, account_no)
);

-- Shipments by ship date: rescheduling one moves it to another partition of silver.
CREATE TABLE shipments (
    shipment_id  bigint        PRIMARY KEY,
    ship_date    date          NOT NULL,
    status       varchar(12)   NOT NULL,
    weight_kg    numeric(12,3),
    updated_at   timestamptz
);
