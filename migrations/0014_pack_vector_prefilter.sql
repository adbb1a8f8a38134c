-- agent_vectors (query-index worker, with agent_passages): each current passage's embedding as
-- halfvec(256), half the bytes of vector(256). The vector list scans it for candidates, then
-- computes the exact cosine of spec 7.5 on agent_passages for those only, keeping every record
-- whose halfvec cosine comes within a proven bound of the cut (docs/pack-engine.md), so the list
-- is the exact scan's. Filled here for indexes already laid out.
CREATE TABLE IF NOT EXISTS agent_vectors (
    publication bigint        NOT NULL,
    ord         integer       NOT NULL,
    embedding   halfvec(256)  NOT NULL,
    PRIMARY KEY (publication, ord)
);

INSERT INTO agent_vectors (publication, ord, embedding)
SELECT publication, ord, embedding::halfvec(256) FROM agent_passages WHERE embedding IS NOT NULL
ON CONFLICT DO NOTHING;
