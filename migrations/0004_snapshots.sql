-- The VolumeSnapshots the snapshot reconciler keeps or removes: one row per recorded snapshot of
-- a live context, or of a garbage-collected one whose object is not yet deleted (rebuildable).
CREATE TABLE IF NOT EXISTS snapshot_objects (
    stream_id uuid    NOT NULL,
    name      text    NOT NULL,
    namespace text    NOT NULL,
    context   text    NOT NULL,
    collected boolean NOT NULL,
    doc       jsonb   NOT NULL,
    PRIMARY KEY (stream_id, name)
);
CREATE INDEX IF NOT EXISTS snapshot_objects_order ON snapshot_objects (namespace, context, name);
