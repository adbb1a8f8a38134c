"""studied_fields: the fields of every current usable index, typed, for the field plans."""
