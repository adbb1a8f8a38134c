-- passage_features.pieces (query-index worker): for an embedded text, its distinct model pieces
-- with their counts (big-endian unsigned 16-bit pairs, ids ascending), computed with its vector
-- at publication. pack-engine/2 pools each record's vector from them with its collection's
-- piece weights when the corpus loader loads an index, instead of tokenizing the text again.
-- NULL for a text that is not embedded or has no pieces, and for the texts stored before this
-- migration, until a later publication of the same text or a rebuild of the projection adds
-- them; empty for a text whose ids or counts do not fit 16 bits. The loader tokenizes those.
ALTER TABLE passage_features ADD COLUMN IF NOT EXISTS pieces bytea;
