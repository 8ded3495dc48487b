"""Front ends: each lowers one constraint language (regex, JSON Schema, EBNF) into the IR."""
