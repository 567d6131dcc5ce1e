"""The principal of a TLS client certificate, as Kafka's DefaultKafkaPrincipalBuilder and
SslPrincipalMapper make it: ``User:`` and the certificate subject's distinguished name in RFC
2253 form (``CN=alice,OU=eng,O=Acme``), passed through ``ssl.principal.mapping.rules``: a list
of ``RULE:pattern/replacement/[L|U]`` and ``DEFAULT``, the first rule whose pattern matches the
whole name deciding (``DEFAULT``: the name as it is)."""

from __future__ import annotations

import re

from ...lazy_dataclasses import dataclass

_RULE = re.compile(r"RULE:(?P<pattern>(?:\\/|[^/])*)/(?P<replacement>(?:\\/|[^/])*)/(?P<case>[LU]?)")


class MappingRuleError(ValueError):
    """``ssl.principal.mapping.rules`` that Kafka would refuse at start."""


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""

    def apply(self, name: str) -> str | None:
        if self.pattern is None:
            return name
        if self.pattern.fullmatch(name) is None:
            return None
        # Java's replaceAll with $1-style groups
        out = self.pattern.sub(re.sub(r"\$(\d)", r"\\\1", self.replacement), name)
        return out.lower() if self.case == "L" else out.upper() if self.case == "U" else out


def parse_rules(text: str) -> list[Rule]:
    """The rules of ``ssl.principal.mapping.rules`` (Kafka's default: ``DEFAULT``)."""
    rules: list[Rule] = []
    rest = text.strip()
    while rest:
        if rest.startswith("DEFAULT"):
            rules.append(Rule(None))
            rest = rest[len("DEFAULT") :]
        else:
            match = _RULE.match(rest)
            if match is None:
                raise MappingRuleError(f"Invalid rule: {rest}")
            try:
                pattern = re.compile(match["pattern"].replace("\\/", "/"))
            except re.error as exc:
                raise MappingRuleError(f"Invalid rule: {match.group(0)} ({exc})") from None
            rules.append(Rule(pattern, match["replacement"].replace("\\/", "/"), match["case"]))
            rest = rest[match.end() :]
        rest = rest.strip()
        if rest.startswith(","):
            rest = rest[1:].strip()
        elif rest:
            raise MappingRuleError(f"Invalid rule: {rest}")
    return rules or [Rule(None)]


def certificate_principal(distinguished_name: str, rules: list[Rule]) -> str | None:
    """``User:<mapped name>``, or None when no rule matches (Kafka then fails the connection)."""
    for rule in rules:
        mapped = rule.apply(distinguished_name)
        if mapped is not None:
            return f"User:{mapped}"
    return None
