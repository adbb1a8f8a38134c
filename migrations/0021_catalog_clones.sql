-- GC keeps every snapshot a live clone still uses (spec 6.6). It asks for the clones of one
-- source context, never for every context document of the namespace: this index finds the live
-- catalog documents whose clone provenance names that context. The name is keyed by its MD5 (an
-- adopted context's source annotation has no length limit, and a btree entry cannot exceed about
-- 2,700 bytes, see 0019); the read filters on the hash, through the index, and on the value.
CREATE INDEX IF NOT EXISTS context_catalog_clones
    ON context_catalog (namespace, md5(doc -> 'clone_of' ->> 'context'))
    WHERE live AND doc -> 'clone_of' ->> 'context' IS NOT NULL;
