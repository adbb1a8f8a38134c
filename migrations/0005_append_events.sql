-- Appends a group-commit batch in one round trip: as its own transaction (called outside an
-- explicit one) it takes the event table's lock, so positions follow commit order, inserts every
-- row, and notifies listeners with the new head position as the payload.
CREATE OR REPLACE FUNCTION cs_append_events(
    channel text, ids uuid[], versions int8[], topics text[], states bytea[])
RETURNS TABLE (originator_id uuid, originator_version int8, notification_id int8)
LANGUAGE plpgsql AS $$
DECLARE
    out_ids uuid[];
    out_versions int8[];
    out_positions int8[];
BEGIN
    LOCK TABLE stored_events IN EXCLUSIVE MODE;
    WITH inserted AS (
        INSERT INTO stored_events AS e (originator_id, originator_version, topic, state)
        SELECT * FROM unnest(ids, versions, topics, states)
        RETURNING e.originator_id, e.originator_version, e.notification_id)
    SELECT array_agg(i.originator_id), array_agg(i.originator_version),
           array_agg(i.notification_id)
      INTO out_ids, out_versions, out_positions
      FROM inserted i;
    PERFORM pg_notify(channel, (SELECT max(p) FROM unnest(out_positions) AS p)::text);
    RETURN QUERY SELECT * FROM unnest(out_ids, out_versions, out_positions);
END
$$;
