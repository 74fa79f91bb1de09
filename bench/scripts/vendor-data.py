#!/usr/bin/env python3
"""Rebuild the vendored test data under tests/data/ from ../shared/data.

- tests/data/maskbench/: a deterministic sample of MaskBench files covering every
  sub-collection. Within each sub-collection the files are ordered by the sha256 of the
  file name (the order `sieve maskbench --limit` and llgbench use) and the first
  max(MIN_PER_COLLECTION, round(TARGET * share)) are taken; files larger than MAX_BYTES
  are skipped to keep the repository and the test run small. Files are copied verbatim.
- tests/data/json-schema-test-suite/: the suite's LICENSE, remotes/ and the non-optional
  test files of draft2020-12, draft2019-09, draft7, draft6 and draft4, copied verbatim.

Usage (from the repository root): python3 bench/scripts/vendor-data.py [SHARED_DATA_DIR]
"""

import hashlib
import os
import re
import shutil
import sys

TARGET = 300
MIN_PER_COLLECTION = 4
MAX_BYTES = 64 * 1024
DRAFTS = ("draft2020-12", "draft2019-09", "draft7", "draft6", "draft4")


def collection(name):
    """The sub-collection of a MaskBench file name (see shared/data/README.md)."""
    if "---" in name:
        return name.split("---", 1)[0]
    return re.sub(r"_\d+\.json$", "", name)


def sha_key(name):
    return hashlib.sha256(name.encode("utf-8")).hexdigest()


def fresh_dir(dst):
    """Empties dst, keeping its hand-written SOURCE.md."""
    note = os.path.join(dst, "SOURCE.md")
    kept = open(note, encoding="utf-8").read() if os.path.isfile(note) else None
    if os.path.isdir(dst):
        shutil.rmtree(dst)
    os.makedirs(dst)
    if kept is not None:
        with open(note, "w", encoding="utf-8") as f:
            f.write(kept)


def vendor_maskbench(src, dst):
    names = sorted(n for n in os.listdir(src) if n.endswith(".json") and not n.startswith("."))
    groups = {}
    for n in names:
        groups.setdefault(collection(n), []).append(n)
    total = len(names)
    fresh_dir(dst)
    picked = []
    for coll in sorted(groups):
        files = sorted(groups[coll], key=sha_key)
        want = max(MIN_PER_COLLECTION, round(TARGET * len(files) / total))
        chosen = [f for f in files if os.path.getsize(os.path.join(src, f)) <= MAX_BYTES][:want]
        picked.extend(chosen)
        print(f"  {coll:24} {len(chosen):4} of {len(files)}")
    for f in picked:
        shutil.copyfile(os.path.join(src, f), os.path.join(dst, f))
    print(f"maskbench: {len(picked)} files -> {dst}")


def vendor_suite(src, dst):
    fresh_dir(dst)
    shutil.copyfile(os.path.join(src, "LICENSE"), os.path.join(dst, "LICENSE"))
    shutil.copytree(os.path.join(src, "remotes"), os.path.join(dst, "remotes"))
    n = 0
    for draft in DRAFTS:
        d_src = os.path.join(src, "tests", draft)
        d_dst = os.path.join(dst, "tests", draft)
        os.makedirs(d_dst)
        for f in sorted(os.listdir(d_src)):
            if f.endswith(".json") and os.path.isfile(os.path.join(d_src, f)):
                shutil.copyfile(os.path.join(d_src, f), os.path.join(d_dst, f))
                n += 1
    print(f"json-schema-test-suite: {n} test files -> {dst}")


def main():
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    shared = sys.argv[1] if len(sys.argv) > 1 else os.path.join(repo, "..", "shared", "data")
    data = os.path.join(repo, "tests", "data")
    vendor_maskbench(os.path.join(shared, "maskbench"), os.path.join(data, "maskbench"))
    vendor_suite(
        os.path.join(shared, "json-schema-test-suite"),
        os.path.join(data, "json-schema-test-suite"),
    )


if __name__ == "__main__":
    main()
