"""The JSON Schema front end: a schema lowered to grammar IR, plus its runtime trackers.

`schema` is the entry point (`lower_json_schema`), `lowered` what the compiler
builds from (`lower_for_compiler`: both lowerings and the trackers); `lowerer` walks
a schema and dispatches each type to the module that lowers it (`keywords`). The trackers (`unique_tracker`,
`length_caps`) wrap a compiled automaton where a keyword is not a regular or
context-free language (uniqueItems, long maxLength). Knows the IR and the back ends'
public types; knows nothing of the engine, model or server.
"""
