"""Self-check for the secrets corpus (corpus_dev.py, corpus_test.py).

Run: python3 /work/indep/secrets/check.py
"""
import ast
import dataclasses
import hashlib
import importlib
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
MODS = ("corpus_dev", "corpus_test")
MIN_CASES, MIN_ORD = 45, 30


def stdlib_only(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.name}: relative import"
            names = [node.module]
        else:
            continue
        for n in names:
            top = n.split(".")[0]
            assert top in sys.stdlib_module_names, f"{path.name}: non-stdlib import {n}"


def fingerprint(mod):
    h = hashlib.sha256()
    for c in mod.CASES:
        h.update(repr((c.id, c.text, c.secrets, c.kind)).encode())
    for o in mod.ORDINARY:
        h.update(repr(o).encode())
    return h.hexdigest()


def isolated_fingerprint(name):
    code = (f"import sys; sys.path.insert(0, {str(HERE)!r}); import hashlib, {name} as m\n"
            "h = hashlib.sha256()\n"
            "for c in m.CASES: h.update(repr((c.id, c.text, c.secrets, c.kind)).encode())\n"
            "for o in m.ORDINARY: h.update(repr(o).encode())\n"
            "print(h.hexdigest())\n")
    # -I: isolated (no user site, no PYTHONPATH, no cwd); -S: no site-packages at all
    out = subprocess.run([sys.executable, "-B", "-I", "-S", "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, f"{name} failed to import with stdlib only:\n{out.stderr}"
    return out.stdout.strip()


def main():
    sys.dont_write_bytecode = True
    sys.path.insert(0, str(HERE))
    all_ids = {}
    all_secrets = []
    all_ordinary = []
    summary = []
    for name in MODS:
        path = HERE / f"{name}.py"
        stdlib_only(path)
        mod = importlib.import_module(name)
        assert isinstance(mod.CASES, list) and isinstance(mod.ORDINARY, list), name
        assert len(mod.CASES) >= MIN_CASES, f"{name}: only {len(mod.CASES)} cases"
        assert len(mod.ORDINARY) >= MIN_ORD, f"{name}: only {len(mod.ORDINARY)} ordinary"
        Case = mod.Case
        assert dataclasses.is_dataclass(Case) and Case.__dataclass_params__.frozen, f"{name}: Case not frozen dataclass"
        assert [f.name for f in dataclasses.fields(Case)] == ["id", "text", "secrets", "kind"], name
        texts = set()
        for c in mod.CASES:
            assert isinstance(c, Case), (name, c)
            assert isinstance(c.id, str) and c.id, (name, c)
            assert c.id not in all_ids, f"duplicate id {c.id!r} in {name} and {all_ids[c.id]}"
            all_ids[c.id] = name
            assert isinstance(c.text, str) and c.text.strip(), c.id
            nlines = len(c.text.split("\n"))
            assert 1 <= nlines <= 15, f"{c.id}: {nlines} lines"
            assert c.text not in texts, f"{c.id}: duplicate text"
            texts.add(c.text)
            assert isinstance(c.kind, str) and c.kind.strip(), c.id
            assert isinstance(c.secrets, tuple) and c.secrets, f"{c.id}: secrets must be a non-empty tuple"
            for s in c.secrets:
                assert isinstance(s, str), (c.id, s)
                assert len(s) >= 8, f"{c.id}: secret shorter than 8: {s!r}"
                assert s in c.text, f"{c.id}: secret not in text: {s!r}"
                all_secrets.append((c.id, s))
        for o in mod.ORDINARY:
            assert isinstance(o, tuple) and len(o) == 2 and all(isinstance(x, str) for x in o), (name, o)
            oid, text = o
            assert oid and oid not in all_ids, f"duplicate id {oid!r}"
            all_ids[oid] = name
            assert text.strip(), oid
            assert len(text.split("\n")) <= 15, f"{oid}: too many lines"
            all_ordinary.append(o)
        fp = fingerprint(mod)
        assert isolated_fingerprint(name) == fp, f"{name}: not deterministic across processes"
        summary.append(f"{name}: {len(mod.CASES)} cases, {len(mod.ORDINARY)} ordinary, "
                       f"{sum(len(c.secrets) for c in mod.CASES)} secret values")
    for oid, text in all_ordinary:
        for cid, s in all_secrets:
            assert s not in text, f"ordinary {oid} contains secret of {cid}"
    print("\n".join(summary))
    print("OK")


if __name__ == "__main__":
    main()
