"""Drive an unmodified `huggingface_hub` against `kernels serve`.

Usage: python hub_compat.py EXPECTED.json

HF_ENDPOINT (and the cache variables) must be set before this script starts,
because huggingface_hub reads them at import time. EXPECTED.json is written by
the Rust test (tests/it/serve.rs) from the mirror it built; every assertion
compares what the client got with the mirror's own files and digests:

  repo_id, repo_type ("model" or "kernel"), revision, commit,
  branches / tags / pull_requests: {name: sha},
  files: {path: {"oid", "size", "sha256" (or null), "local": path on disk}},
  variant: a folder under build/, plain_file, lfs_file, missing_file.
"""

import json
import os
import sys

import huggingface_hub
from huggingface_hub import HfApi, hf_hub_download, snapshot_download

try:  # 1.x/2.x
    from huggingface_hub.errors import EntryNotFoundError, RevisionNotFoundError, RepositoryNotFoundError
except ImportError:  # 0.3x
    from huggingface_hub.utils import EntryNotFoundError, RevisionNotFoundError, RepositoryNotFoundError


def check(cond, message):
    if not cond:
        raise AssertionError(message)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def main():
    with open(sys.argv[1]) as f:
        exp = json.load(f)
    repo_id, repo_type, rev, commit = exp["repo_id"], exp["repo_type"], exp["revision"], exp["commit"]
    files = exp["files"]
    api = HfApi()
    version = huggingface_hub.__version__
    print(f"huggingface_hub {version}, repo_type={repo_type}", file=sys.stderr)

    # list_repo_refs
    refs = api.list_repo_refs(repo_id, repo_type=repo_type)
    got = {b.name: b.target_commit for b in refs.branches}
    check(got == exp["branches"], f"branches {got} != {exp['branches']}")
    got = {t.name: t.target_commit for t in refs.tags}
    check(got == exp["tags"], f"tags {got} != {exp['tags']}")
    check(refs.converts == [], f"converts {refs.converts}")
    refs = api.list_repo_refs(repo_id, repo_type=repo_type, include_pull_requests=True)
    got = {p.name: p.target_commit for p in refs.pull_requests}
    check(got == exp["pull_requests"], f"pull requests {got} != {exp['pull_requests']}")

    # repo info
    if repo_type == "model":
        info = api.repo_info(repo_id, revision=rev, files_metadata=True, repo_type="model")
        check(info.sha == commit, f"info sha {info.sha} != {commit}")
        siblings = {s.rfilename: s for s in info.siblings}
        check(set(siblings) == set(files), f"siblings {sorted(siblings)} != {sorted(files)}")
        for path, meta in files.items():
            s = siblings[path]
            check(s.blob_id == meta["oid"], f"{path}: blob_id {s.blob_id} != {meta['oid']}")
            check(s.size == meta["size"], f"{path}: size {s.size} != {meta['size']}")
            if meta["sha256"]:
                check(s.lfs is not None and s.lfs.sha256 == meta["sha256"], f"{path}: lfs {s.lfs}")
                check(s.lfs.size == meta["size"], f"{path}: lfs size {s.lfs.size}")
            else:
                check(s.lfs is None, f"{path}: unexpected lfs {s.lfs}")
    else:
        info = api.kernel_info(repo_id, revision="refs/heads/" + rev)
        check(info.sha == commit, f"kernel_info sha {info.sha} != {commit}")
        info = api.repo_info(repo_id, revision=rev, repo_type="kernel")
        check(info.sha == commit, f"repo_info(kernel) sha {info.sha} != {commit}")
        check(info.id == repo_id, f"id {info.id}")

    # list_repo_tree, recursive (the server pages every few entries)
    entries = list(api.list_repo_tree(repo_id, revision=rev, recursive=True, repo_type=repo_type))
    tree_files = {e.path: e for e in entries if type(e).__name__ == "RepoFile"}
    check(set(tree_files) == set(files), f"tree files {sorted(tree_files)} != {sorted(files)}")
    for path, meta in files.items():
        e = tree_files[path]
        check(e.blob_id == meta["oid"], f"tree {path}: oid {e.blob_id} != {meta['oid']}")
        check(e.size == meta["size"], f"tree {path}: size {e.size}")
        if meta["sha256"]:
            check(e.lfs is not None and e.lfs.sha256 == meta["sha256"], f"tree {path}: lfs {e.lfs}")
        else:
            check(e.lfs is None, f"tree {path}: unexpected lfs")
    folders = [e.path for e in api.list_repo_tree(repo_id, path_in_repo="build", revision=rev, repo_type=repo_type)]
    check(f"build/{exp['variant']}" in folders, f"build listing {folders}")
    expanded = list(api.list_repo_tree(repo_id, revision=rev, recursive=True, expand=True, repo_type=repo_type))
    check(len(expanded) == len(entries), "expand=True lists the same entries")
    check(all(e.last_commit is not None for e in expanded), "expand=True gives last_commit")

    # hf_hub_download, non-LFS and LFS
    for path, key in ((exp["plain_file"], "oid"), (exp["lfs_file"], "sha256")):
        local = hf_hub_download(repo_id, path, revision=rev, repo_type=repo_type)
        check(read(local) == read(files[path]["local"]), f"{path}: downloaded bytes differ")
        blob = os.path.basename(os.path.realpath(local))
        check(blob == files[path][key], f"{path}: blob name {blob} != {files[path][key]}")

    try:
        hf_hub_download(repo_id, exp["missing_file"], revision=rev, repo_type=repo_type)
        raise AssertionError("missing file downloaded")
    except EntryNotFoundError:
        pass
    try:
        hf_hub_download(repo_id, exp["plain_file"], revision="no-such-rev", repo_type=repo_type)
        raise AssertionError("unknown revision downloaded")
    except RevisionNotFoundError:
        pass
    try:
        api.list_repo_refs(repo_id + "-nope", repo_type=repo_type)
        raise AssertionError("unknown repo listed")
    except RepositoryNotFoundError:
        pass

    # snapshot_download of one variant
    prefix = f"build/{exp['variant']}/"
    folder = snapshot_download(repo_id, revision=rev, repo_type=repo_type, allow_patterns=[prefix + "*"])
    check(os.path.basename(folder) == commit, f"snapshot folder {folder}")
    got = set()
    for root, _, names in os.walk(folder):
        for name in names:
            got.add(os.path.relpath(os.path.join(root, name), folder).replace(os.sep, "/"))
    want = {p for p in files if p.startswith(prefix)}
    check(got == want, f"snapshot files {sorted(got)} != {sorted(want)}")
    for path in want:
        local = os.path.join(folder, path)
        check(read(local) == read(files[path]["local"]), f"snapshot {path}: bytes differ")
        blob = os.path.basename(os.path.realpath(local))
        meta = files[path]
        check(blob == (meta["sha256"] or meta["oid"]), f"snapshot {path}: blob name {blob}")
    print("ok")


if __name__ == "__main__":
    main()
