"""``trine repl DB``: interactive queries (prompt_toolkit).

Input is SPARQL-ish (``SELECT``/``ASK`` of trine's subset) or bare triple
patterns (``?x a ub:Student . ?x ub:name ?n``, meaning ``SELECT *``).  A query
may span lines; Enter runs it when it is complete: braces balance and it ends
with ``}`` or with a LIMIT / OFFSET / ORDER BY clause, or a bare pattern ends
with ``.``, or the line is blank.  Lines starting with ``.`` are commands
(``.help`` lists them).

History is kept across sessions in ``~/.trine_history`` (``$TRINE_HISTORY``
overrides).  Tab completes prefixes, the local names of the store's frequent
predicates and classes, keywords and the variables typed so far.  Ctrl-C
while a query runs cancels it and keeps the session; Ctrl-D quits.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import IO, Iterable

import numpy as np
from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer, Completion
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings

from trine.query.api import explain_query, run_query
from trine.query.errors import QueryError
from trine.query.parser import DEFAULT_PREFIXES
from trine.query.results import FORMATS, term_short, write_results

__all__ = ["run_repl", "Repl", "is_complete", "TrineCompleter", "history_path"]

HELP = """\
Queries: SELECT / ASK (trine's SPARQL subset) or bare triple patterns such as
  ?x a ub:Student . ?x ub:name ?n
End a query with '}' (or a LIMIT/OFFSET/ORDER BY clause), a bare pattern with
'.', or press Enter on a blank line.  Ctrl-C cancels a running query, Ctrl-D quits.

Commands:
  .help                     this text
  .prefixes                 list the prefixes in effect
  .prefix p: <iri>          declare a prefix for this session
  .explain <query>          run the query and show its plan (estimated and actual rows)
  .timing on|off            print the time each query takes
  .format table|csv|tsv|json  output format
  .paging on|off            page long results (on a terminal)
  .quit                     leave (also .exit, Ctrl-D)
"""

KEYWORDS = ["SELECT", "WHERE", "FILTER", "ORDER BY", "LIMIT", "OFFSET", "DISTINCT", "REDUCED",
            "COUNT", "ASK", "PREFIX", "BASE", "ASC", "DESC", "regex", "bound", "isIRI", "isBlank",
            "isLiteral", "lang", "langMatches", "datatype", "str"]
COMMANDS = [".help", ".prefixes", ".prefix", ".explain", ".timing", ".format", ".paging", ".quit", ".exit"]

_TAIL_CLAUSE = re.compile(
    r"(?:\bLIMIT\s+\d+|\bOFFSET\s+\d+|\bORDER\s+BY\s+(?:(?:ASC|DESC)?\s*\([^()]*\)|[?$]\w+)"
    r"(?:\s+(?:(?:ASC|DESC)?\s*\([^()]*\)|[?$]\w+))*)\s*$",
    re.IGNORECASE,
)
_STRINGS_COMMENTS = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|<[^<>\s]*>|#[^\n]*')


def history_path() -> Path:
    return Path(os.environ.get("TRINE_HISTORY") or Path.home() / ".trine_history")


def _strip(text: str) -> str:
    """Text without strings, IRIs and comments (so braces inside them do not count)."""
    return _STRINGS_COMMENTS.sub(lambda m: " " if m.group(0).startswith("#") else "x", text)


def is_complete(text: str) -> bool:
    """Whether Enter after ``text`` should run it (see the module docstring)."""
    if not text.strip():
        return False
    stripped_text = text.strip()
    if stripped_text.startswith("."):
        return True
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1].strip() == "":
        return True  # Enter on a blank line
    code = _strip(text).rstrip()
    depth = code.count("{") - code.count("}")
    if depth > 0:
        return False
    if "{" not in code:
        # a bare pattern: complete when it ends with '.'; PREFIX lines alone are not a query
        body = re.sub(r"(?is)^\s*(?:(?:PREFIX\s+\S*:\s*x|BASE\s+x)\s*)*", "", code)
        return bool(body) and code.endswith(".")
    return code.endswith("}") or bool(_TAIL_CLAUSE.search(code))


# ---------------------------------------------------------------------------
# Completion
# ---------------------------------------------------------------------------

_WORD = re.compile(r"[<?$]?[\w:.\-/#]*$")


class TrineCompleter(Completer):
    """Prefixes, known IRIs (by local name), keywords and variables."""

    def __init__(self, prefixes: dict[str, str], iris: Iterable[str] = ()):
        self.prefixes = prefixes
        self.iris = list(dict.fromkeys(iris))

    def _forms(self):
        """(local name, inserted text) of every known IRI, frequent first."""
        for iri in self.iris:
            short = term_short_iri(iri, self.prefixes)
            local = re.split(r"[#/:]", iri.rstrip("/#"))[-1]
            yield local, short

    def get_completions(self, document, complete_event):
        before = document.text_before_cursor
        m = _WORD.search(before)
        word = m.group(0) if m else ""
        line_start = before[: len(before) - len(word)].strip() == "" and "\n" not in before
        seen: set[str] = set()

        def out(text: str, meta: str = ""):
            if text not in seen and text != word:
                seen.add(text)
                return Completion(text, start_position=-len(word), display_meta=meta)
            return None

        if word.startswith(".") and line_start:
            for c in COMMANDS:
                if c.startswith(word):
                    comp = out(c, "command")
                    if comp:
                        yield comp
            return
        if word.startswith(("?", "$")):
            for v in dict.fromkeys(re.findall(r"[?$]([A-Za-z_][\w]*)", document.text)):
                cand = word[0] + v
                if cand.startswith(word):
                    comp = out(cand, "variable")
                    if comp:
                        yield comp
            return
        if word.startswith("<"):
            for iri in self.iris:
                cand = "<" + iri + ">"
                if cand.startswith(word):
                    comp = out(cand, "IRI")
                    if comp:
                        yield comp
            return
        if ":" in word:
            for local, short in self._forms():
                if short.startswith(word):
                    comp = out(short, "IRI")
                    if comp:
                        yield comp
            for p in sorted(self.prefixes):
                if (p + ":").startswith(word):
                    comp = out(p + ":", "prefix")
                    if comp:
                        yield comp
            return
        low = word.lower()
        for p in sorted(self.prefixes):
            if p.lower().startswith(low) and word:
                comp = out(p + ":", "prefix")
                if comp:
                    yield comp
        for kw in KEYWORDS:
            if word and kw.lower().startswith(low):
                comp = out(kw, "keyword")
                if comp:
                    yield comp
        if word:
            for local, short in self._forms():
                if local.lower().startswith(low):
                    comp = out(short, "IRI")
                    if comp:
                        yield comp


def term_short_iri(iri: str, prefixes: dict[str, str]) -> str:
    from rdflib import URIRef
    return term_short(URIRef(iri), prefixes)


def known_iris(store, limit: int = 2000) -> list[str]:
    """Predicates and classes of the store, most frequent first."""
    from trine.query import access
    from trine.store.terms import unescape_iri
    from trine.store.vocab import TYPE
    out: list[tuple[int, int]] = []
    with store.db.read() as txn:
        for p in access.predicates(txn):
            out.append((txn.key_count("pso", p), p))
        n_type = txn.key_count("pos", TYPE)
        if n_type:
            rows, _ = access.fetch(txn, None, TYPE, None, sort_by=2)
            classes, counts = np.unique(rows[:, 2], return_counts=True)
            out.extend(zip(counts.tolist(), classes.tolist()))
        out.sort(key=lambda x: -x[0])
        iris = []
        for _, tid in out[:limit]:
            t = txn.term(tid)
            if t.startswith("<"):
                iris.append(unescape_iri(t[1:-1]))
    return list(dict.fromkeys(iris))


# ---------------------------------------------------------------------------
# Paging
# ---------------------------------------------------------------------------


class _StopPaging(Exception):
    pass


class _Pager(io.TextIOBase):
    """A text stream that prints a page at a time and asks before the next."""

    def __init__(self, out: IO[str], ask, height: int):
        self.out = out
        self.ask = ask
        self.height = max(5, height)
        self.lines = 0
        self.all = False
        self._partial = ""

    def isatty(self) -> bool:
        return True

    def write(self, s: str) -> int:
        text = self._partial + s
        parts = text.split("\n")
        self._partial = parts.pop()
        for line in parts:
            if not self.all and self.lines >= self.height - 1:
                answer = self.ask()
                if answer == "q":
                    raise _StopPaging()
                if answer == "a":
                    self.all = True
                self.lines = 0
            self.out.write(line + "\n")
            self.lines += 1
        return len(s)

    def flush(self) -> None:
        if self._partial:
            self.out.write(self._partial)
            self._partial = ""
        self.out.flush()


# ---------------------------------------------------------------------------
# The REPL
# ---------------------------------------------------------------------------


class Repl:
    def __init__(self, store, *, input=None, output=None, history_file: Path | None = None,
                 out: IO[str] | None = None, paging: bool | None = None):
        self.store = store
        self.out = out or sys.stdout
        self.fmt = "table"
        self.timing = False
        self.paging = self.out.isatty() if paging is None else paging
        self.prefixes: dict[str, str] = dict(DEFAULT_PREFIXES)
        for p, ns in store.namespaces():
            self.prefixes[p] = ns
        try:
            iris = known_iris(store)
        except Exception:  # pragma: no cover - completion is a convenience
            iris = []
        self.completer = TrineCompleter(self.prefixes, iris)
        hist_path = history_file if history_file is not None else history_path()
        try:
            hist_path.parent.mkdir(parents=True, exist_ok=True)
            history = FileHistory(str(hist_path))
        except OSError:  # pragma: no cover - unwritable home
            history = InMemoryHistory()
        kb = KeyBindings()

        @kb.add("enter")
        def _(event):
            buf = event.current_buffer
            text = buf.text
            if (not text.strip() or buf.document.current_line.strip() == ""
                    or is_complete(text)):
                buf.validate_and_handle()
            else:
                buf.insert_text("\n")

        self.session = PromptSession(
            history=history, completer=self.completer, multiline=True, key_bindings=kb,
            complete_while_typing=False, input=input, output=output,
            prompt_continuation=lambda width, line_number, soft_wrap: "...".ljust(width),
        )
        self._more = PromptSession(input=input, output=output)

    # -- output helpers --------------------------------------------------------
    def say(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def _ask_more(self) -> str:
        self.out.flush()
        try:
            ans = self._more.prompt("-- more: Enter next page, a all, q stop -- ")
        except (EOFError, KeyboardInterrupt):
            return "q"
        return ans.strip().lower()[:1]

    # -- loop ------------------------------------------------------------------
    def run(self) -> None:
        self.say("trine repl: SPARQL-ish queries or triple patterns; .help for commands, Ctrl-D to quit")
        while True:
            try:
                text = self.session.prompt("trine> ")
            except KeyboardInterrupt:
                continue
            except EOFError:
                break
            text = text.strip()
            if not text:
                continue
            if text.startswith("."):
                if self.command(text) is False:
                    break
                continue
            self.execute(text)

    def command(self, text: str) -> bool | None:
        cmd, _, arg = text.partition(" ")
        cmd = cmd.lower()
        arg = arg.strip()
        if cmd in (".quit", ".exit", ".q"):
            return False
        if cmd == ".help":
            self.out.write(HELP)
        elif cmd == ".prefixes":
            for p in sorted(self.prefixes):
                self.say(f"PREFIX {p}: <{self.prefixes[p]}>")
        elif cmd == ".prefix":
            m = re.match(r"^([A-Za-z][\w.\-]*)?:\s*<([^<>\s]*)>$", arg)
            if not m:
                self.say("usage: .prefix p: <http://example.org/ns#>")
            else:
                self.prefixes[m.group(1) or ""] = m.group(2)
                self.say(f"PREFIX {m.group(1) or ''}: <{m.group(2)}>")
        elif cmd == ".timing":
            if arg.lower() not in ("on", "off"):
                self.say(f"timing is {'on' if self.timing else 'off'} (.timing on|off)")
            else:
                self.timing = arg.lower() == "on"
                self.say(f"timing {arg.lower()}")
        elif cmd == ".paging":
            if arg.lower() not in ("on", "off"):
                self.say(f"paging is {'on' if self.paging else 'off'} (.paging on|off)")
            else:
                self.paging = arg.lower() == "on"
                self.say(f"paging {arg.lower()}")
        elif cmd == ".format":
            if arg.lower() not in FORMATS:
                self.say(f"format is {self.fmt} (.format {'|'.join(FORMATS)})")
            else:
                self.fmt = arg.lower()
                self.say(f"format {self.fmt}")
        elif cmd == ".explain":
            if not arg:
                self.say("usage: .explain <query>")
            else:
                self.execute(arg, explain=True)
        else:
            self.say(f"unknown command {cmd}; .help lists the commands")
        return None

    def execute(self, text: str, explain: bool = False) -> None:
        t0 = time.perf_counter()
        result = None
        try:
            if explain:
                self.say(explain_query(self.store, text, prefixes=self.prefixes, allow_bare_patterns=True))
                return
            result = run_query(self.store, text, prefixes=self.prefixes, allow_bare_patterns=True)
            out: IO[str] = self.out
            if self.paging:
                height = shutil.get_terminal_size((80, 24)).lines
                out = _Pager(self.out, self._ask_more, height)
            n = write_results(result, self.fmt, out)
            out.flush()
            if self.timing:
                dt = (time.perf_counter() - t0) * 1000
                what = "answer" if result.form == "ASK" else f"{n:,} row{'s' if n != 1 else ''}"
                self.say(f"({what} in {dt:.1f} ms)")
        except QueryError as e:
            self._error(e, text)
        except _StopPaging:
            self.say("(output stopped)")
        except KeyboardInterrupt:
            self.out.write("\n")
            self.say("query cancelled")
        except Exception as e:  # keep the session alive
            self.say(f"error: {type(e).__name__}: {e}")
        finally:
            if result is not None:
                result.close()

    def _error(self, e: QueryError, text: str) -> None:
        line = getattr(e, "line", None)
        col = getattr(e, "column", None)
        self.say(f"error: {e}")
        if line is not None and col is not None:
            lines = text.split("\n")
            if 1 <= line <= len(lines):
                self.say("  " + lines[line - 1])
                self.say("  " + " " * (col - 1) + "^")


def run_repl(store, **kwargs) -> None:
    """Run the interactive loop on an open Store until the user quits."""
    Repl(store, **kwargs).run()
