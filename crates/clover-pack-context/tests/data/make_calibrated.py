"""Regenerates the calibrated-problem records pack-context's tests read.

    target/clover-venv/bin/python crates/clover-pack-context/tests/data/make_calibrated.py

extract and calibrate build these records in the real pipeline; this script stands in for
them so pack-context can be tested on its own. It parses the fixture's tests with Python's
`ast`, runs the suite once with coverage contexts (`--cov-context=test`) in a temporary copy,
and derives what calibrate derives: per-test coverage, the empty run's coverage, context tiers
(peer/other/repo), unique blocks (>= 5 executable lines only this test reaches) and targets.
The C++ records pair fixtures/cpp sources with their tests the way extract does.
"""

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
PY = ROOT / "fixtures" / "python"
CPP = ROOT / "fixtures" / "cpp"
REPO = "pyfix"
OPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
       ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}


def line_offsets(text):
    offs, pos = [0], 0
    for line in text.splitlines(keepends=True):
        pos += len(line.encode())
        offs.append(pos)
    return offs


def span(node, offs):
    return {"start_line": node.lineno, "end_line": node.end_lineno,
            "start_byte": offs[node.lineno - 1] + node.col_offset,
            "end_byte": offs[node.end_lineno - 1] + node.end_col_offset}


def is_constant(node):
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Tuple):
        return all(is_constant(e) for e in node.elts)
    return False


def segment(text, node):
    return ast.get_source_segment(text, node)


def assertion_sites(fn, text, offs):
    sites = []
    for node in ast.walk(fn):
        if not isinstance(node, ast.Assert):
            continue
        t = node.test
        if isinstance(t, ast.Compare) and len(t.ops) == 1:
            form, op, ops = "binary", OPS[type(t.ops[0])], [t.left, t.comparators[0]]
        else:
            inner = t.operand if isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not) else t
            form, op, ops = "unary", None, [inner]
        sites.append((node, form, op, ops))
    sites.sort(key=lambda s: (s[0].lineno, s[0].col_offset))
    return sites


def run_coverage():
    tmp = Path(tempfile.mkdtemp(prefix="clover-calib-"))
    try:
        shutil.copytree(PY, tmp / "repo")
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", COVERAGE_FILE=str(tmp / ".coverage"))
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--cov=ledger",
               "--cov-context=test", "--cov-report=", "tests"]
        subprocess.run(cmd, cwd=tmp / "repo", env=env, check=False, stdout=subprocess.DEVNULL)
        subprocess.run([sys.executable, "-m", "coverage", "json", "--show-contexts", "-o",
                        str(tmp / "cov.json")], cwd=tmp / "repo", env=env, check=True,
                       stdout=subprocess.DEVNULL)
        data = json.loads((tmp / "cov.json").read_text())
    finally:
        shutil.rmtree(tmp)
    files = {}
    for path, f in data["files"].items():
        path = path.replace(str(tmp / "repo") + "/", "")
        idx = path.find("src/ledger/")
        path = path[idx:] if idx >= 0 else path
        executable = sorted(set(f["executed_lines"]) | set(f["missing_lines"]))
        by_line = {}
        for line, ctxs in f["contexts"].items():
            tests = set()
            empty = False
            for c in ctxs:
                if c == "":
                    empty = True
                else:
                    node = c.rsplit("|", 1)[0]
                    tests.add(re.sub(r"\[.*\]$", "", node))
            by_line[int(line)] = (empty, tests)
        files[path] = (executable, by_line)
    return files


def ranges(lines):
    out = []
    for l in sorted(lines):
        if out and out[-1][1] + 1 == l:
            out[-1][1] = l
        else:
            out.append([l, l])
    return out


def definitions():
    defs = {}
    for f in sorted((PY / "src" / "ledger").glob("*.py")):
        rel = f"src/ledger/{f.name}"
        tree = ast.parse(f.read_text())
        for node in tree.body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                kind = "class" if isinstance(node, ast.ClassDef) else "function"
                defs[node.name] = (rel, kind, node.lineno, node.end_lineno, f"ledger.{f.stem}")
    return defs


def python_records():
    cov = run_coverage()
    defs = definitions()
    tests = {}  # node id (function level) -> {path: set(lines)}
    empty_cov = {}
    for path, (_, by_line) in cov.items():
        for line, (empty, ts) in by_line.items():
            if empty:
                empty_cov.setdefault(path, set()).add(line)
            for t in ts:
                tests.setdefault(t, {}).setdefault(path, set()).add(line)
    records = []
    for test_file in sorted((PY / "tests").glob("test_*.py")):
        rel = f"tests/{test_file.name}"
        text = test_file.read_text()
        tree = ast.parse(text)
        imported = {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom)
                    and n.module == "ledger" for a in n.names}
        setup = [n for n in tree.body if not (isinstance(n, ast.FunctionDef) and n.name.startswith("test"))
                 and not isinstance(n, ast.ClassDef)]
        units = []  # (class node or None, fn)
        for n in tree.body:
            if isinstance(n, ast.FunctionDef) and n.name.startswith("test"):
                units.append((None, n))
            elif isinstance(n, ast.ClassDef):
                for m in n.body:
                    if isinstance(m, ast.FunctionDef) and m.name.startswith("test"):
                        units.append((n, m))
        lines = text.splitlines(keepends=True)

        def src(node):
            first = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
            return "".join(lines[first - 1:node.end_lineno])

        node_ids = [f"{rel}::{c.name}::{f.name}" if c else f"{rel}::{f.name}" for c, f in units]
        for n, (cls, fn) in enumerate(units):
            setup_code = "".join(src(s) + "\n" for s in setup)
            if cls is not None:
                header = "".join(lines[cls.lineno - 1:cls.body[0].lineno - 1])
                members = [m for m in cls.body if not (isinstance(m, ast.FunctionDef) and m.name.startswith("test"))]
                setup_code += "\n" + header + "".join(src(m) + "\n" for m in members)
            else:
                setup_code += "\n"
            problem_text = setup_code + src(fn)
            problem_file = f"tests/tmp_test_{test_file.stem[5:]}_{n}.py"
            ptree = ast.parse(problem_text)
            pfn = next(x for x in ast.walk(ptree) if isinstance(x, ast.FunctionDef) and x.name == fn.name
                       and x.lineno > setup_code.count("\n"))
            poffs, offs = line_offsets(problem_text), line_offset_cache(text)
            first = min([d.lineno for d in pfn.decorator_list] + [pfn.lineno])
            plines = problem_text.splitlines(keepends=True)
            declaration = "".join(plines[first - 1:pfn.body[0].lineno - 1])
            body = "".join(plines[pfn.body[0].lineno - 1:pfn.end_lineno])
            osites = assertion_sites(fn, text, offs)
            psites = assertion_sites(pfn, problem_text, poffs)
            assertions = []
            for (onode, _, _, _), (pnode, form, op, ops) in zip(osites, psites):
                assertions.append({
                    "span": span(onode, offs), "problem_span": span(pnode, poffs),
                    "text": segment(problem_text, pnode), "form": form, "operator": op,
                    "operands": [{"text": segment(problem_text, o), "problem_span": span(o, poffs),
                                  "is_constant": is_constant(o)} for o in ops]})
            used = {x.id for x in ast.walk(fn) if isinstance(x, ast.Name)}
            refs = sorted(used & imported)
            repo_refs = [{"name": r, "module": defs[r][4] if r in defs else "ledger",
                          "file": defs[r][0] if r in defs else None} for r in refs]
            node_id = node_ids[n]
            mine = tests.get(node_id, {})
            peers = [tests.get(p, {}) for p in node_ids if p != node_id]
            tiers = []
            for path in sorted(set(mine) | set(empty_cov)):
                t_lines = mine.get(path, set())
                beyond = t_lines - empty_cov.get(path, set())
                if not beyond:
                    tier = "repo"
                elif any(all(l not in p.get(path, set()) for p in peers) for l in beyond):
                    tier = "peer"
                else:
                    tier = "other"
                tiers.append({"path": path, "tier": tier})
            blocks = []
            for path, (executable, by_line) in sorted(cov.items()):
                run = []
                src_lines = (PY / path).read_text().splitlines(keepends=True)
                for l in executable + [None]:
                    only = l is not None and by_line.get(l, (False, set()))[1] == {node_id}
                    if only:
                        run.append(l)
                        continue
                    if len(run) >= 5:
                        blocks.append({"path": path, "start_line": run[0], "end_line": run[-1],
                                       "code": "".join(src_lines[run[0] - 1:run[-1]])})
                    run = []
            targets = []
            for r in refs:
                if r not in defs:
                    continue
                path, kind, a, b = defs[r][:4]
                if any(a < l <= b for l in mine.get(path, set())):
                    targets.append({"name": r, "kind": kind, "path": path, "start_line": a, "end_line": b})
            flaky = "flaky" in rel and "shuffled" in fn.name
            problem = {"kind": "problem", "schema_version": 1, "id": f"{REPO}/{node_id}", "repo": REPO,
                       "language": "python", "cpp": None, "python": {
                           "test_file": rel, "class": cls.name if cls else None, "name": fn.name,
                           "span": span(fn, offs), "problem_file": problem_file,
                           "node_id": problem_file + node_id[len(rel):], "problem_text": problem_text,
                           "setup_code": setup_code, "declaration": declaration, "body": body,
                           "problem_declaration_line": first, "assertions": assertions,
                           "repo_refs": repo_refs}}
            records.append({
                "kind": "calibrated_problem", "schema_version": 1, "id": problem["id"], "repo": REPO,
                "problem": problem,
                "exclusion": {"reason": "flaky", "detail": "outcome changed between runs: passed, failed"} if flaky else None,
                "base": [{"path": p, "lines": ranges(ls | empty_cov.get(p, set()))} for p, ls in sorted(mine.items())],
                "empty": [{"path": p, "lines": ranges(ls)} for p, ls in sorted(empty_cov.items())],
                "tiers": tiers, "unique_blocks": blocks[:10], "targets": targets,
                "runs": ["passed", "failed"] if flaky else ["passed", "passed"]})
    return records


_OFFS = {}


def line_offset_cache(text):
    if text not in _OFFS:
        _OFFS[text] = line_offsets(text)
    return _OFFS[text]


def cpp_records():
    pairs = [("ring_buffer", "tests/ring_buffer_test.cc"), ("tokenizer", "tests/tokenizer_test.cc"),
             ("histogram", "tests/histogram_unittest.cc")]
    records = []
    for stem, test in pairs:
        code = (CPP / "src" / f"{stem}.cc").read_text()
        unit = (CPP / test).read_text()
        lines = code.splitlines(keepends=True)
        chunks = []
        if len(lines) > 200:
            # Cut after a top-level closing brace near the middle, as extract cuts along
            # top-level syntax nodes.
            cut = next(i for i in range(len(lines) // 2, len(lines)) if lines[i].startswith("}"))
            bounds = [(0, cut + 1), (cut + 1, len(lines))]
        else:
            bounds = [(0, len(lines))]
        for i, (a, b) in enumerate(bounds):
            part = "".join(lines[a:b])
            start = len("".join(lines[:a]).encode())
            chunks.append({"index": i, "span": {"start_line": a + 1, "end_line": b, "start_byte": start,
                                                 "end_byte": start + len(part.encode())}, "code": part})
        cases = []
        ulines = unit.splitlines(keepends=True)
        for m in re.finditer(r"^(TEST|TEST_F|TEST_P)\((\w+),\s*(\w+)\)", unit, re.M):
            ln = unit[:m.start()].count("\n") + 1
            cases.append({"macro_name": m.group(1), "suite": m.group(2), "name": m.group(3),
                          "span": {"start_line": ln, "end_line": ln, "start_byte": m.start(),
                                   "end_byte": m.end()}})
        pid = f"cppfix/src/{stem}.cc"
        problem = {"kind": "problem", "schema_version": 1, "id": pid, "repo": "cppfix", "language": "cpp",
                   "python": None, "cpp": {"file_name": f"{stem}.cc", "file_path": f"src/{stem}.cc",
                                           "test_path": test, "header_path": f"src/{stem}.h", "code": code,
                                           "unit_test": unit, "tests": cases, "chunks": chunks}}
        records.append({"kind": "calibrated_problem", "schema_version": 1, "id": pid, "repo": "cppfix",
                        "problem": problem, "exclusion": None, "base": [], "empty": [],
                        "tiers": [{"path": f"src/{stem}.h", "tier": "peer"}], "unique_blocks": [],
                        "targets": [], "runs": ["passed", "passed"]})
    return records


def write(name, records):
    with open(HERE / name, "w") as f:
        for r in records:
            f.write(json.dumps(r, sort_keys=False) + "\n")
    print(f"wrote {len(records)} records to {HERE / name}")


if __name__ == "__main__":
    write("calibrated_python.jsonl", python_records())
    write("calibrated_cpp.jsonl", cpp_records())
