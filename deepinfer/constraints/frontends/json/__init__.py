"""The JSON Schema front end: a schema lowered to grammar IR, plus its runtime trackers.

`schema` is the entry point (`compile_json_schema`); `lowerer` walks a schema and
dispatches each keyword to the module that lowers it. The trackers (`unique_tracker`,
`length_caps`) wrap a compiled automaton where a keyword is not a regular or
context-free language (uniqueItems, long maxLength). Knows the IR and the back ends'
public types; knows nothing of the engine, model or server.
"""
