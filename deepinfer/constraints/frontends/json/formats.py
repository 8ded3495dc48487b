"""JSON Schema `format` values as regular languages over decoded string characters.

Each known format is a regex (Python syntax, full match) describing a subset of
the strings the corresponding validator accepts, chosen to contain the usual
spellings: RFC 3339 dates and times (real month lengths and leap years), ISO
8601 durations, RFC 5321-style e-mail addresses, RFC 1123 host names, dotted
IPv4 without leading zeros, RFC 4291 IPv6, RFC 3986 URIs and URI references,
RFC 4122 UUIDs, RFC 6901 JSON pointers. Unknown formats are not here: the
caller records them as annotations. Knows nothing about JSON text.
"""

from __future__ import annotations

import functools

from deepinfer.constraints.ir import Expr

from .pattern import parse_pattern

_YEAR = r"(?:[1-9]\d{3}|0[1-9]\d\d|00[1-9]\d|000[1-9])"
_LEAP = r"(?:\d\d(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
_MONTH_DAY = (r"(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)"
              r"|02-(?:0[1-9]|1\d|2[0-8]))")
_DATE = rf"(?:{_YEAR}-{_MONTH_DAY}|{_LEAP}-02-29)"
_TIME = r"(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,9})?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)"
_DUR_TIME = r"T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S)"
_DUR_DATE = r"(?:\d+D|\d+M(?:\d+D)?|\d+Y(?:\d+M(?:\d+D)?)?)"
_DURATION = rf"P(?:{_DUR_DATE}(?:{_DUR_TIME})?|{_DUR_TIME}|\d+W)"
_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_TOP_LABEL = r"[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = rf"(?:{_LABEL}\.){{0,2}}{_TOP_LABEL}"  # at most 191 characters (limit 253)
_EMAIL = rf"{_ATOM}(?:\.{_ATOM})*@(?:{_LABEL}\.){{1,3}}{_TOP_LABEL}"
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]\d|\d)"
_IPV4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}"
_H = r"[0-9a-fA-F]{1,4}"
_IPV6 = (rf"(?:(?:{_H}:){{7}}{_H}|(?:{_H}:){{1,6}}:|(?:{_H}:){{1,6}}:{_H}|(?:{_H}:){{1,5}}(?::{_H}){{1,2}}"
         rf"|(?:{_H}:){{1,4}}(?::{_H}){{1,3}}|(?:{_H}:){{1,3}}(?::{_H}){{1,4}}"
         rf"|(?:{_H}:){{1,2}}(?::{_H}){{1,5}}|{_H}:(?::{_H}){{1,6}}|:(?::{_H}){{1,6}}|::)")
_PCT = r"%[0-9A-Fa-f]{2}"
_UNRESERVED_SUB = r"A-Za-z0-9\-._~!$&'()*+,;="
_PCHAR = rf"(?:[{_UNRESERVED_SUB}:@]|{_PCT})"
_REG_NAME = rf"(?:[{_UNRESERVED_SUB}]|{_PCT})*"
_USERINFO = rf"(?:(?:[{_UNRESERVED_SUB}:]|{_PCT})*@)?"
_AUTHORITY = rf"{_USERINFO}{_REG_NAME}(?::\d*)?"
_PATH_ABEMPTY = rf"(?:/{_PCHAR}*)*"
_TAIL = rf"(?:\?(?:{_PCHAR}|[/?])*)?(?:#(?:{_PCHAR}|[/?])*)?"
_HIER = rf"(?://{_AUTHORITY}{_PATH_ABEMPTY}|/(?:{_PCHAR}+(?:/{_PCHAR}*)*)?|{_PCHAR}+(?:/{_PCHAR}*)*|)"
_URI = rf"[A-Za-z][A-Za-z0-9+.\-]*:{_HIER}{_TAIL}"
_NC_SEGMENT = rf"(?:[{_UNRESERVED_SUB}@]|{_PCT})+"
_RELATIVE = (rf"(?://{_AUTHORITY}{_PATH_ABEMPTY}|/(?:{_PCHAR}+(?:/{_PCHAR}*)*)?"
             rf"|{_NC_SEGMENT}(?:/{_PCHAR}*)*|){_TAIL}")
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"

FORMAT_REGEXES: dict[str, str] = {
    "date": _DATE,
    "time": _TIME,
    "date-time": rf"{_DATE}T{_TIME}",
    "duration": _DURATION,
    "email": _EMAIL,
    "hostname": _HOSTNAME,
    "ipv4": _IPV4,
    "ipv6": _IPV6,
    "uri": _URI,
    "uri-reference": rf"(?:{_URI}|{_RELATIVE})",
    "uuid": _UUID,
    "json-pointer": r"(?:/(?:[^~/]|~[01])*)*",
}


@functools.cache
def format_expr(name: str) -> Expr | None:
    """The decoded-string language of a known format, or None for an unknown one."""
    regex = FORMAT_REGEXES.get(name)
    return None if regex is None else parse_pattern(f"^(?:{regex})$")
