-- Events of a type this version does not know (a newer version's, stored during a rolling
-- upgrade) are passed over by every view, and the view's tracking position moves past them. Each
-- view notes here, in the transaction that moves its position, which types it passed over and
-- where: the first start of a version that knows such a type rebuilds that view from position
-- zero (it would otherwise never apply the events it passed over). A rebuild clears its rows.
CREATE TABLE IF NOT EXISTS projection_passed_over (
    application_name text NOT NULL,
    event_type text NOT NULL,
    first_position bigint NOT NULL,
    last_position bigint NOT NULL,
    events bigint NOT NULL,
    PRIMARY KEY (application_name, event_type)
);
