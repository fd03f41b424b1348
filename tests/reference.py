"""An independent reference for the materialisation contract (docs/reasoning.md).

Plain Python sets over canonical term strings; shares no code with
trine.reasoning.  Naive fixpoint of the six rho-df rules; count by
enumerating rule instances over the result; step by naive stages.
"""

from __future__ import annotations

TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
SPO = "<http://www.w3.org/2000/01/rdf-schema#subPropertyOf>"
SCO = "<http://www.w3.org/2000/01/rdf-schema#subClassOf>"
DOM = "<http://www.w3.org/2000/01/rdf-schema#domain>"
RNG = "<http://www.w3.org/2000/01/rdf-schema#range>"

Triple = tuple[str, str, str]


def instances(I: set[Triple]):
    """Every rule instance (rule, body1, body2, head) with body in I and a valid head."""
    by_p: dict[str, list[Triple]] = {}
    for t in I:
        by_p.setdefault(t[1], []).append(t)
    out = []
    for r, name in ((SPO, "R1"), (SCO, "R2")):
        for t1 in by_p.get(r, []):
            for t2 in by_p.get(r, []):
                if t1[2] == t2[0]:
                    out.append((name, t1, t2, (t1[0], r, t2[2])))
    for t1 in by_p.get(SPO, []):
        q, _, p = t1
        if not p.startswith("<"):
            continue
        for t2 in by_p.get(q, []):
            out.append(("R3", t1, t2, (t2[0], p, t2[2])))
    for t1 in by_p.get(SCO, []):
        b, _, c = t1
        for t2 in by_p.get(TYPE, []):
            if t2[2] == b:
                out.append(("R4", t1, t2, (t2[0], TYPE, c)))
    for t1 in by_p.get(DOM, []):
        for t2 in by_p.get(t1[0], []):
            out.append(("R5", t1, t2, (t2[0], TYPE, t1[2])))
    for t1 in by_p.get(RNG, []):
        for t2 in by_p.get(t1[0], []):
            if not t2[2].startswith('"'):
                out.append(("R6", t1, t2, (t2[2], TYPE, t1[2])))
    return out


def closure(E: set[Triple]) -> dict[Triple, tuple[bool, int, int]]:
    """triple -> (explicit, count, step) for the explicit set E."""
    stage = {t: 0 for t in E}
    current = set(E)
    n = 0
    while True:
        n += 1
        heads = {h for _, _, _, h in instances(current)}
        new = heads - current
        if not new:
            break
        for h in new:
            stage[h] = n
        current |= new
    counts = {t: (1 if t in E else 0) for t in current}
    for _, _, _, h in instances(current):
        counts[h] += 1
    return {t: (t in E, counts[t], stage[t]) for t in current}


def annotated_lines(result: dict[Triple, tuple[bool, int, int]]) -> list[str]:
    lines = [f"{s} {p} {o} . # explicit={int(e)} count={c} step={st}"
             for (s, p, o), (e, c, st) in result.items()]
    return sorted(lines, key=lambda l: l[:l.index(" # explicit=")])
