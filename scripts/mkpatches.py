#!/usr/bin/python3
"""Export the project as an upstreamable series against Linux 6.12 (make patches).

Usage: mkpatches.py [--out DIR] [--no-build] [--author "Name <email>"]

Builds a git tree of the upstream files the series touches (from Debian's
linux-source tarball, or KSRC=<tree>), commits the series described in
linux/patches.toml on top (project files with their Makefile and Kconfig
hooks, and the hook patches of linux/series), and writes it with
git format-patch and a cover letter to DIR (default build/patches).
Then checks every patch with checkpatch.pl --strict and builds the tree
at every patch against the headers (KDIR), so that each patch builds on
its own.  Prints one line per patch; exits 1 if any check failed.

The patches are authored and signed off (Signed-off-by, the DCO) by the
submitter: --author, or else git's user.name and user.email as git sees
them from the current directory.  With neither it refuses (exit 2): a
series signed by a placeholder cannot be taken upstream.
"""
import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tomllib

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
# The author is set in main() (identity()); the dates are fixed so that the
# same tree exports the same patches.
ENV = dict(os.environ, GIT_AUTHOR_DATE="2026-11-30T00:00:00Z",
           GIT_COMMITTER_DATE="2026-11-30T00:00:00Z")
SIGNOFF = None
# Upstream files beyond linux/upstream-files: the build hooks the series
# edits, and checkpatch with its data files.
EXTRA = ["drivers/vhost/Makefile", "drivers/virtio/Makefile", "drivers/virtio/Kconfig",
         "drivers/scsi/Kconfig"]
CHECKPATCH = ["scripts/checkpatch.pl", "scripts/spelling.txt", "scripts/const_structs.checkpatch"]


def camel_upstream(line, paths):
    """The identifier of a CAMELCASE check if the upstream files use it."""
    m = re.search(r"CAMELCASE: Avoid CamelCase: <(\w+)>", line)
    if not m:
        return None
    word = re.compile(r"\b%s\b" % m.group(1))
    for p in paths:
        with open(p, errors="replace") as f:
            if word.search(f.read()):
                return m.group(1)
    return None


def die(msg):
    sys.exit(f"mkpatches: error: {msg}")


def identity(author):
    """(name, email) of the submitter: --author, or git's user.name/user.email."""
    if author:
        m = re.fullmatch(r"\s*([^<>]*?)\s*<([^<>@\s]+@[^<>\s]+)>\s*", author)
        if not m or not m.group(1):
            sys.exit(f"mkpatches: error: --author '{author}' is not 'Name <email>'")
        return m.group(1), m.group(2)
    got = {}
    for key in ("user.name", "user.email"):
        p = subprocess.run(["git", "config", key], text=True, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL)
        got[key] = p.stdout.strip() if p.returncode == 0 else ""
    missing = [k for k, v in got.items() if not v]
    if missing:
        print(f"mkpatches: error: no author for the patches: git has no {' and no '.join(missing)}.\n"
              "  The series is signed off (Signed-off-by, the Developer's Certificate of Origin)\n"
              "  by its submitter, so it needs yours.  Either\n"
              "    git config --global user.name 'Your Name'\n"
              "    git config --global user.email you@example.org\n"
              "  or: make patches PATCHES_ARGS=\"--author 'Your Name <you@example.org>'\"",
              file=sys.stderr)
        sys.exit(2)
    return got["user.name"], got["user.email"]


def sh(cmd, cwd=None, check=True, **kw):
    p = subprocess.run(cmd, cwd=cwd, env=ENV, text=True, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, **kw)
    if check and p.returncode:
        die(f"{' '.join(cmd)} failed ({p.returncode}): {p.stdout[-800:]}")
    return p


def versions():
    v = {}
    with open(os.path.join(TOP, "scripts", "versions.env")) as f:
        for line in f:
            m = re.match(r"^(\w+)=\"?([^\"#]*)\"?", line.strip())
            if m:
                v[m.group(1)] = m.group(2).strip()
    return v


def upstream(files):
    """Directory with the given upstream files (cached extraction)."""
    if os.environ.get("KSRC"):
        src = os.environ["KSRC"]
        missing = [f for f in files if not os.path.isfile(os.path.join(src, f))]
        if missing:
            die(f"KSRC={src} lacks {missing}")
        return src
    v = versions()
    tarball = f"/usr/src/{v['SQCQ_KSRC_PKG']}.tar.xz"
    if not os.path.isfile(tarball):
        die(f"{tarball} missing: install {v['SQCQ_KSRC_PKG']} (make deps) or set KSRC=<6.12 tree>")
    st = os.stat(tarball)
    key = hashlib.sha256(f"{st.st_size} {st.st_mtime}\n{sorted(files)}".encode()).hexdigest()[:12]
    cache = os.path.join(os.environ.get("SQCQ_CACHE", "/var/cache/sqcq"), f"patchbase-{key}")
    if not os.path.isfile(os.path.join(cache, ".done")):
        print(f"mkpatches: extracting {len(files)} files from {tarball}", flush=True)
        shutil.rmtree(cache + ".tmp", ignore_errors=True)
        os.makedirs(cache + ".tmp")
        topdir = os.path.basename(tarball)[:-len(".tar.xz")]
        sh(["tar", "-xJf", tarball, "-C", cache + ".tmp", "--strip-components=1"]
           + [f"{topdir}/{f}" for f in files])
        open(os.path.join(cache + ".tmp", ".done"), "w").close()
        shutil.rmtree(cache, ignore_errors=True)
        os.rename(cache + ".tmp", cache)
    return cache


def kconfig_entries():
    """{symbol: (file, [(selector, selector_file)], text)} from the top-level Kconfig."""
    out = {}
    with open(os.path.join(TOP, "Kconfig")) as f:
        blocks = re.split(r"\n(?=# file:)", f.read())
    for b in blocks[1:]:
        lines = b.strip("\n").split("\n")
        kfile = lines[0].split(":", 1)[1].strip()
        sel = [tuple(x.split(":", 1)[1].split()) for x in lines if x.startswith("# selected-by:")]
        body = "\n".join(x for x in lines if not x.startswith("#"))
        sym = re.search(r"^config (\w+)", body, re.M).group(1)
        out[sym] = (kfile, sel, body.strip("\n") + "\n")
    return out


def add_select(path, selector, sym):
    with open(path) as f:
        text = f.read()
    m = re.search(rf"^config {selector}\n(?:\t.*\n)*?\tdepends on .*\n", text, re.M)
    if not m:
        die(f"cannot find 'config {selector}' with a depends line in {path}")
    text = text[:m.end()] + f"\tselect {sym}\n" + text[m.end():]
    with open(path, "w") as f:
        f.write(text)


def commit(tree, subject, body):
    sh(["git", "add", "-A"], cwd=tree)
    msg = f"{subject}\n\n{body.strip()}\n\n{SIGNOFF}\n"
    sh(["git", "commit", "-q", "-F", "-"], cwd=tree, input=msg)


def hook_message(path):
    """Subject and body of a git format-patch file."""
    with open(path) as f:
        text = f.read()
    subject = re.search(r"^Subject: (?:\[PATCH[^\]]*\] )?(.*)$", text, re.M).group(1)
    head = text.split("\n---\n", 1)[0]
    body = head.split("\n\n", 1)[1] if "\n\n" in head else ""
    body = "\n".join(x for x in body.split("\n") if not x.startswith("Signed-off-by:"))
    return subject, body


def build_check(tree, sha, work, kdir):
    """Build the modules the tree has at commit sha; return (ok, what)."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    sh(["bash", "-c", f"git -C {tree} archive {sha} | tar -x -C {work}"])
    inc = f"-I{work}/include -I{work}/include/uapi"
    built = []
    symvers = []
    # drivers/virtio first: virtio_scsi needs its symbols.
    for d, mod in (("drivers/virtio", "virtio_sqcq"), ("drivers/vhost", "vhost_scsi"),
                   ("drivers/scsi", "virtio_scsi")):
        if mod == "virtio_sqcq" and not os.path.exists(f"{work}/{d}/virtio_sqcq.c"):
            continue
        # Kbuild prefers a Kbuild file: the directory's Makefile as the
        # series leaves it (drivers/scsi's is not part of it), reduced to
        # our module; the symbol the series adds is not in the headers'
        # configuration, so it is set here.
        with open(f"{work}/{d}/Kbuild", "w") as f:
            if d == "drivers/scsi":
                f.write("obj-m := virtio_scsi.o\n")
            else:
                f.write("CONFIG_VIRTIO_SQCQ := m\ninclude $(src)/Makefile\n"
                        f"obj-m := $(filter {mod}.o,$(obj-m))\nobj-y :=\n")
        args = ["make", "-C", kdir, f"M={work}/{d}", f"KCFLAGS={inc}",
                f"-j{os.cpu_count()}", "modules"]
        if symvers:
            args.append(f"KBUILD_EXTRA_SYMBOLS={' '.join(symvers)}")
        p = sh(args, check=False)
        if p.returncode or not os.path.exists(f"{work}/{d}/{mod}.ko"):
            errs = [x for x in p.stdout.splitlines() if "error" in x.lower() or "undefined" in x.lower()]
            return False, f"{mod}.ko: {' | '.join(errs[:3]) or p.stdout[-300:]}"
        if "WARNING: modpost" in p.stdout:
            return False, f"{mod}.ko: {[x for x in p.stdout.splitlines() if 'WARNING' in x][:2]}"
        symvers.append(f"{work}/{d}/Module.symvers")
        built.append(f"{mod}.ko")
    return True, " ".join(built)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(TOP, "build", "patches"))
    ap.add_argument("--no-build", action="store_true", help="skip the per-patch build")
    ap.add_argument("--author", help="'Name <email>' (default: git's user.name and user.email)")
    a = ap.parse_args()
    global SIGNOFF
    name, email = identity(a.author)
    ENV.update(GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email,
               GIT_COMMITTER_NAME=name, GIT_COMMITTER_EMAIL=email)
    SIGNOFF = f"Signed-off-by: {name} <{email}>"
    print(f"mkpatches: author and Signed-off-by: {name} <{email}>", flush=True)
    v = versions()
    kdir = os.environ.get("KDIR", f"/lib/modules/{v['SQCQ_KVER']}/build")
    if not a.no_build and not os.path.isfile(os.path.join(kdir, "Makefile")):
        die(f"KDIR={kdir} is not a kernel build tree; install linux-headers-{v['SQCQ_KVER']} (make deps)")
    with open(os.path.join(TOP, "linux", "patches.toml"), "rb") as f:
        series = tomllib.load(f)
    with open(os.path.join(TOP, "linux", "upstream-files")) as f:
        base_files = [x.strip() for x in f if x.strip() and not x.startswith("#")]
    src = upstream(sorted(set(base_files + EXTRA + CHECKPATCH + ["Makefile"])))
    kconf = kconfig_entries()

    work = os.path.join(TOP, "build", "patches.work")
    tree = os.path.join(work, "tree")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(tree)
    for f in base_files + EXTRA + ["Makefile"]:
        os.makedirs(os.path.dirname(os.path.join(tree, f)) or tree, exist_ok=True)
        shutil.copy(os.path.join(src, f), os.path.join(tree, f))
    sh(["git", "init", "-q"], cwd=tree)
    commit(tree, "Linux 6.12 (the files this series touches)", "Base for the series.")
    base = sh(["git", "rev-parse", "HEAD"], cwd=tree).stdout.strip()

    for p in series["patch"]:
        if "from" in p:
            pf = os.path.join(TOP, "linux", p["from"])
            subject, body = hook_message(pf)
            sh(["git", "apply", "--index", pf], cwd=tree)
        else:
            subject, body = p["subject"], p["body"]
            for f in p["files"]:
                os.makedirs(os.path.dirname(os.path.join(tree, f)), exist_ok=True)
                shutil.copy(os.path.join(TOP, f), os.path.join(tree, f))
            for path, old, new in p.get("replace", []):
                t = open(os.path.join(tree, path)).read()
                if old not in t:
                    die(f"'{old}' not in {path}")
                open(os.path.join(tree, path), "w").write(t.replace(old, new, 1))
            for path, line in p.get("append", []):
                with open(os.path.join(tree, path), "a") as f:
                    f.write(line + "\n")
            for sym in p.get("kconfig", []):
                kfile, _, text = kconf[sym]
                with open(os.path.join(tree, kfile), "a") as f:
                    f.write("\n" + text)
        if p.get("select"):
            for sym, (_, sels, _) in kconf.items():
                for selector, sfile in sels:
                    add_select(os.path.join(tree, sfile), selector, sym)
        commit(tree, subject, body)

    shutil.rmtree(a.out, ignore_errors=True)
    sh(["git", "format-patch", "-q", "--cover-letter", "-o", a.out, f"{base}..HEAD"], cwd=tree)
    files = sorted(os.listdir(a.out))
    cover = os.path.join(a.out, files[0])
    t = open(cover).read()
    t = t.replace("*** SUBJECT HERE ***", series["cover"]["subject"])
    t = t.replace("*** BLURB HERE ***", series["cover"]["body"].strip())
    open(cover, "w").write(t)

    cp = os.path.join(work, "checkpatch.pl")
    for f in CHECKPATCH:
        shutil.copy(os.path.join(src, f), os.path.join(work, os.path.basename(f)))
    shas = sh(["git", "rev-list", "--reverse", f"{base}..HEAD"], cwd=tree).stdout.split()
    failed = 0
    print(f"mkpatches: {len(shas)} patches + cover letter in {a.out}")
    for f, sha in zip(files[1:], shas):
        r = sh(["perl", cp, "--strict", "--no-tree", "--show-types", "--terse",
                os.path.join(a.out, f)], check=False, cwd=work)
        # New files always ask whether MAINTAINERS needs an entry: it does,
        # but MAINTAINERS is not part of this tree.
        found = [x for x in r.stdout.splitlines() if re.search(r": (ERROR|WARNING|CHECK):", x)]
        issues = [x for x in found if "FILE_PATH_CHANGES" not in x]
        maint = " (new files: the MAINTAINERS reminder)" if len(found) > len(issues) else ""
        # --no-tree checkpatch does not know the kernel's own CamelCase
        # types (in a full tree it seeds them from include/): one the
        # upstream files already use (struct Scsi_Host) is not ours.
        upstream_c = [os.path.join(src, x) for x in base_files if x.endswith((".c", ".h"))]
        known = [x for x in issues if camel_upstream(x, upstream_c)]
        issues = [x for x in issues if x not in known]
        if known:
            maint += " (upstream CamelCase: " + ", ".join(
                sorted({camel_upstream(x, upstream_c) for x in known})) + ")"
        cp_ok = not issues
        if a.no_build:
            b_ok, what = True, "build skipped"
        else:
            b_ok, what = build_check(tree, sha, os.path.join(work, "build"), kdir)
        ok = cp_ok and b_ok
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {f}: checkpatch --strict "
              f"{'clean' + maint if cp_ok else str(len(issues)) + ' issues'}; "
              f"build {'ok (' + what + ')' if b_ok else 'FAILED: ' + what}")
        for x in issues[:10]:
            print(f"       {x}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
