"""Grammar-driven SQL: the official `openai` SDK asks a deepinfer server for a query
that can only use the tables and columns of *your* database.

    deepinfer serve &                                  # in another terminal
    python examples/sql_client.py "Which customers spent the most?" [--base-url URL]

The grammar is built from the schema below, so a table or column name that
does not exist cannot be generated. It travels in vLLM's `structured_outputs`
field; a grammar the server cannot compile comes back as HTTP 400 naming the
line and column.
"""

from __future__ import annotations

import argparse
import os

import openai

TABLES = {
    "customers": ["id", "name", "country"],
    "orders": ["id", "customer_id", "total", "placed_at"],
}


def sql_grammar(tables: dict[str, list[str]]) -> str:
    """A lark grammar for SELECT queries over exactly these tables and columns."""
    def alternatives(names):
        return " | ".join(f'"{n}"' for n in sorted(names))

    columns = {c for cols in tables.values() for c in cols}
    qualified = {f"{t}.{c}" for t, cols in tables.items() for c in cols}
    return f"""
start: "SELECT " select_list " FROM " table join? where? order? limit? ";"
select_list: "*" | column (", " column)*
column: agg "(" field ")" | field
agg: "COUNT" | "SUM" | "AVG" | "MAX" | "MIN"
field: {alternatives(columns | qualified)}
table: {alternatives(tables)}
join: " JOIN " table " ON " field " = " field
where: " WHERE " field " " op " " value
op: "=" | ">" | "<" | ">=" | "<="
value: /[0-9]{{1,6}}/ | /'[A-Za-z ]{{1,20}}'/
order: " ORDER BY " column (" DESC" | " ASC")?
limit: " LIMIT " /[1-9][0-9]?/
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question")
    parser.add_argument("--base-url", default=os.environ.get("DEEPINFER_BASE_URL", "http://127.0.0.1:8000/v1"))
    parser.add_argument("--api-key", default=os.environ.get("DEEPINFER_API_KEY", "none"))
    parser.add_argument("--model", default="default", help="model id (a single-model server accepts any)")
    parser.add_argument("--max-tokens", type=int, default=120)
    args = parser.parse_args()

    client = openai.OpenAI(base_url=args.base_url, api_key=args.api_key)
    schema_text = "\n".join(f"{t}({', '.join(cols)})" for t, cols in TABLES.items())
    reply = client.chat.completions.create(
        model=args.model, max_tokens=args.max_tokens, temperature=0,
        messages=[{"role": "system", "content": f"Write one SQL query. Tables:\n{schema_text}"},
                  {"role": "user", "content": args.question}],
        extra_body={"structured_outputs": {"grammar": sql_grammar(TABLES)}})
    choice = reply.choices[0]
    print(choice.message.content)
    if choice.finish_reason != "stop":
        print(f"-- unfinished ({choice.finish_reason}); raise --max-tokens")


if __name__ == "__main__":
    main()
