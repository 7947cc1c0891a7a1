-- The ledger, partitioned in silver by region and currency.
CREATE TABLE ledger_entries (
    entry_id    bigint unsigned NOT NULL PRIMARY KEY,
    booked_at   datetime(6)     NOT NULL,
    amount      decimal(30,10)  NOT NULL,
    currency    enum('EUR','USD','JPY') NOT NULL,
    details     json,
    checksum    varbinary(32),
    region      enum('emea','amer','apac') NOT NULL,
    memo        varchar(255)    NULL DEFAULT ''  -- an explicit NULL must stay NULL, not become ''
);
