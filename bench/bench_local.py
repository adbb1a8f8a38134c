"""contextctl's local store: how fast a revision is addressed and a local query answers, each
against a baseline run in the same process on the same files.

    python -m bench.bench_local [--records 50000] [--artifact-mb 32] [--queries 20]

A generated (seeded) knowledge context: ``knowledge/records.jsonl`` of ``--records`` records
of 20-40 words, and ``--artifact-mb`` of artifacts in 8 files beside it.

- capture: ``local capture`` of the files (spec 4.2: every file hashed, the entries hashed), in
  MB/s, and its ratio to hashing the same files' bytes alone with ``hashlib`` (the floor);
- query: ``local query`` of one and of three words, p50 / p95 over ``--queries`` queries, and
  the ratio of its median to the raw read of the records (the file read and every line decoded
  as JSON, which any query must do at least). A local query reads the files as they are now:
  its records are addressed on every query, so the artifacts' hashing is part of it.
Figures are printed; there are no thresholds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import tempfile
import time
from pathlib import Path

from bench.harness import percentile
from context_service.contextctl.local import LocalStore, search

WORDS = [f"w{n}" for n in range(5000)] + ["release", "schedule", "ledger", "tenant", "replica"]


def build(home: Path, records: int, artifact_mb: int, seed: int = 7) -> Path:
    rng = random.Random(seed)
    store = LocalStore(home)
    context = store.create("kb", "knowledge")
    (context.root / "knowledge").mkdir(parents=True, exist_ok=True)
    with (context.root / "knowledge" / "records.jsonl").open("w") as out:
        for n in range(records):
            words = rng.choices(WORDS, k=rng.randint(20, 40))
            out.write(json.dumps({"id": f"r{n}", "title": " ".join(words[:4]),
                                  "text": " ".join(words)}) + "\n")
    artifacts = context.root / "artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)
    for n in range(8):
        (artifacts / f"blob-{n}.bin").write_bytes(rng.randbytes(artifact_mb * (1 << 20) // 8))
    return context.root


def hash_alone(root: Path) -> float:
    """Seconds to hash every portable file's bytes, and nothing else."""
    started = time.perf_counter()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and ".context" not in p.parts):
        with path.open("rb") as stream:
            hashlib.file_digest(stream, "sha256")
    return time.perf_counter() - started


def raw_read(root: Path) -> float:
    started = time.perf_counter()
    with (root / "knowledge" / "records.jsonl").open("rb") as stream:
        for line in stream:
            json.loads(line)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--artifact-mb", type=int, default=32)
    parser.add_argument("--queries", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-local-") as folder:
        home = Path(folder)
        root = build(home, args.records, args.artifact_mb)
        size = sum(p.stat().st_size for p in root.rglob("*")
                   if p.is_file() and ".context" not in p.parts)
        store = LocalStore(home)
        hash_alone(root)  # the page cache warm for both
        floor = min(hash_alone(root) for _ in range(3))
        started = time.perf_counter()
        entry, _ = store.open("kb").publish("capture")
        capture = time.perf_counter() - started
        print(f"portable content: {entry['files']} files, {size / (1 << 20):.1f} MB "
              f"({args.records:,} records)")
        print(f"capture: {size / (1 << 20) / capture:.0f} MB/s; hashing the bytes alone "
              f"{size / (1 << 20) / floor:.0f} MB/s; ratio {floor / capture:.2f}x")
        rng = random.Random(11)
        read = min(raw_read(root) for _ in range(3))
        for words in (1, 3):
            times = []
            for _ in range(args.queries):
                text = " ".join(rng.choices(WORDS, k=words))
                started = time.perf_counter()
                search(store, text, limit=20)
                times.append(time.perf_counter() - started)
            p50, p95 = percentile(times, 50), percentile(times, 95)
            print(f"query of {words} word{'s' if words > 1 else ''}: p50 / p95 "
                  f"{p50 * 1000:.0f} / {p95 * 1000:.0f} ms; the raw read of the records "
                  f"{read * 1000:.0f} ms; ratio {p50 / read:.2f}x")


if __name__ == "__main__":
    main()
