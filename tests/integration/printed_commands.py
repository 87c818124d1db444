#!/usr/bin/env python3
"""printed_commands.py: collect every command ghostvram prints (next steps, hints, fixes, banners)
from saved outputs, and run each in its dry form on the host that printed it.

  printed_commands.py check --situation NAME --bin GV_BIN --sim DIR|'' [options] OUTPUT...

OUTPUT files hold what a printer wrote (text, or JSON when the file parses as JSON). Collection is
generic, so new situations and new messages join without a change here:
  text  - every `backquoted` span; every 'single-quoted' or (parenthesised) span that starts with
          ghostvram or sudo ghostvram; a line that starts with a command (ghostvram, sudo, VAR=...)
          or with "next:", "Next:", "Then:" or "$ " before one; each GHOSTVRAM_SIM=WORD (banners):
          WORD, read as the shell reads it, must be the simulated host's directory
  JSON  - every string is read as text (above); a string under a key that names a command
          (next_step, command, hint, fix, fixes, suggestion, remedy, action) that starts with a
          command is one whole
How each command is run (its dry form), decided here and nowhere else:
  - it is split into words as a POSIX shell does ('...', "...", $'...', backslashes; ; && || |
    between commands, each judged alone); anything the shell would expand ($VAR, `...`, $(...),
    globs are left alone as words) or redirect is a failure: a printed command is literal text
  - VAR=VALUE words before the command are its environment; GHOSTVRAM_SIM must name this host
  - sudo: run as root (the test's own user); without it, as the user that printed it
    (--user-prefix, e.g. setpriv to nobody)
  - ghostvram: run for real after these changes only: --yes/-y becomes --dry-run (reclaim) and is
    dropped elsewhere; top gets --batch --iterations 1, watch --count 2 --interval 200ms, xid
    --follow is dropped; scan/check/reclaim get --confirm 300ms (speed: the default 2 s wait
    changes no parsing); --extra options of the situation (a recorded bundle's --from-bundle, a
    missing driver's --nvml-lib, a hung driver's --call-timeout) where the command accepts them;
    serve, demo, experiment and sim init are only parsed (--help appended: a usage error still
    exits 2); placeholders (PID, N, CMD, DIR, ...) get a harmless value, and then a refusal is the
    user's choice, not the printer's error
  - host commands are never run (they reset GPUs, unload modules, need tools this machine lacks):
    the name must be one the printers may use (HOST_TOOLS); kill's PIDs must be alive processes
    (the printer named them as holders now) and its signal a real one; cat's file must exist
Failures: a usage error (exit 2; check's UNKNOWN about an option), reclaim refusing (exit 3)
without a placeholder, a time-out, an unknown command word, a banner naming another directory.
A command in KNOWN_FAILURES (situation, regex) prints KNOWN instead of failing, and fails if it
passes (so the list is emptied when the bug is fixed).
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

# Known wrong printed commands, each fixed elsewhere: (situation regex, command regex, why).
# Remove an entry when its fix is merged; an entry that no longer fails fails the test.
KNOWN_FAILURES = []

HOST_TOOLS = {"kill", "cat", "fuser", "lsof", "nvidia-smi", "modprobe", "rmmod", "systemctl", "sysctl",
              "dmesg", "journalctl", "ps", "docker", "kubectl", "reboot", "nvidia-persistenced", "scontrol",
              "ls", "ipcs"}  # ls (coreutils) and ipcs (util-linux): doctor's host-shm
CMD_KEYS = {"next_step", "command", "hint", "fix", "fixes", "suggestion", "remedy", "action"}
PLACEHOLDERS = {"PID": None, "P": None, "N": "0", "GPU": "0", "ID": "0", "I": "0", "CMD": "true",
                "DIR": None, "PATH": None, "FILE": None, "CODE": "79", "MIB": "64", "M": "64", "K": "1"}
PARSE_ONLY = {"serve", "demo", "experiment"}
TAKES = {}  # subcommand -> the options its --help names (filled on demand)
OPS = (";", "&&", "||", "|")


class Unsafe(Exception):
        pass


# ---- a POSIX shell's word splitting, literal text only ------------------------------------
def _dollar_single(s, i):
        """$'...' from s[i] (after $'), bash's escapes; returns (text, index after the quote)."""
        out = []
        simple = {"n": "\n", "t": "\t", "r": "\r", "e": "\x1b", "\\": "\\", "'": "'", '"': '"', "a": "\a",
                  "b": "\b", "f": "\f", "v": "\v"}
        raw = bytearray()
        while i < len(s):
                c = s[i]
                if c == "'":
                        return raw.decode("utf-8", "surrogateescape"), i + 1
                if c == "\\" and i + 1 < len(s):
                        d = s[i + 1]
                        if d in simple:
                                raw += simple[d].encode()
                                i += 2
                                continue
                        m = re.match(r"x([0-9a-fA-F]{1,2})", s[i + 1:])
                        if m:
                                raw.append(int(m.group(1), 16))
                                i += 1 + len(m.group(0))
                                continue
                raw += c.encode("utf-8", "surrogateescape")
                i += 1
        raise Unsafe("unterminated $'")


def shell_split(s):
        """Commands (lists of words) of s, split at ; && || |. Raises Unsafe for what a shell would
        expand or redirect."""
        cmds, words, cur, have, i = [], [], [], False, 0

        def end_word():
                nonlocal cur, have
                if have:
                        words.append("".join(cur))
                cur, have = [], False

        while i < len(s):
                c = s[i]
                if c in " \t\n":
                        end_word()
                        i += 1
                elif c == "'":
                        j = s.find("'", i + 1)
                        if j < 0:
                                raise Unsafe("unterminated '")
                        cur.append(s[i + 1:j])
                        have, i = True, j + 1
                elif c == "$" and s[i + 1:i + 2] == "'":
                        t, i = _dollar_single(s, i + 2)
                        cur.append(t)
                        have = True
                elif c == '"':
                        i += 1
                        while i < len(s) and s[i] != '"':
                                if s[i] in "$`":
                                        raise Unsafe("expansion in double quotes")
                                if s[i] == "\\" and i + 1 < len(s) and s[i + 1] in '"\\$`\n':
                                        i += 1
                                cur.append(s[i])
                                i += 1
                        if i >= len(s):
                                raise Unsafe('unterminated "')
                        have, i = True, i + 1
                elif c == "\\":
                        if i + 1 < len(s):
                                cur.append(s[i + 1])
                        have, i = True, i + 2
                elif c in "$`<>()":
                        raise Unsafe("'%s' would be expanded or redirected" % c)
                elif c in ";&|":
                        op = next((o for o in ("&&", "||") if s.startswith(o, i)), c)
                        if op == "&":
                                raise Unsafe("a background job")
                        end_word()
                        cmds.append(words)
                        words, i = [], i + len(op)
                else:
                        cur.append(c)
                        have, i = True, i + 1
        end_word()
        cmds.append(words)
        return [w for w in cmds if w]


def shell_word(s):
        """The first shell word of s, up to an unquoted blank or operator ("" if it is none)."""
        i = 0
        while i < len(s) and s[i] not in " \t\n;&|()<>":
                if s[i] == "'" or s.startswith("$'", i):
                        dollar = s[i] == "$"  # only $'...' knows backslash escapes
                        i += 2 if dollar else 1
                        while i < len(s) and s[i] != "'":
                                i += 2 if dollar and s[i] == "\\" else 1
                        i += 1
                elif s[i] == "\\":
                        i += 2
                else:
                        i += 1
        try:
                ws = shell_split(s[:i])
        except Unsafe:
                return s[:i]
        return ws[0][0] if ws and ws[0] else ""


# ---- collection ----------------------------------------------------------------------------
CMD_START = r"(?:sudo |[A-Z_][A-Z0-9_]*=\S+ )*(?:ghostvram|%s)\b" % "|".join(re.escape(t) for t in sorted(HOST_TOOLS))


def starts_with_command(t):
        return re.match(CMD_START, t) is not None


def from_text(t, found, sims):
        for m in re.finditer(r"`([^`\n]+)`", t):
                found.append(m.group(1).strip())
        rest = re.sub(r"`[^`\n]+`", " ", t)
        for m in re.finditer(r"'((?:sudo )?ghostvram [^'\n]*)'", rest):
                found.append(m.group(1).strip())
        for m in re.finditer(r"\(((?:sudo )?ghostvram [^()\n]*)\)", rest):
                found.append(m.group(1).strip())
        for line in rest.split("\n"):
                # a line's own command: after a prompt or "next:", or one that starts with sudo or
                # an assignment (a bare "ghostvram ..." line is a title or an error's prefix)
                s = line.strip()
                s, n = re.subn(r"^(?:next|Next|Then|then):\s*|^\$\s+", "", s)
                if (n or re.match(r"sudo |[A-Z_][A-Z0-9_]*=", s)) and starts_with_command(s):
                        s = re.split(r"\s+#\s|,\s+or\s|;\s+(?=[a-z])", s)[0].strip().rstrip(".")
                        found.append(s)
        for m in re.finditer(r"GHOSTVRAM_SIM=", t):
                sims.append(shell_word(t[m.end():]))


def from_json(v, found, sims, key=None):
        if isinstance(v, dict):
                for k, x in v.items():
                        from_json(x, found, sims, k)
        elif isinstance(v, list):
                for x in v:
                        from_json(x, found, sims, key)
        elif isinstance(v, str):
                if key in CMD_KEYS and starts_with_command(v.strip()):
                        found.append(v.strip())
                else:
                        from_text(v, found, sims)


def collect(paths):
        found, sims, origin = [], [], {}
        for p in paths:
                n = len(found)
                with open(p, encoding="utf-8", errors="surrogateescape") as f:
                        t = f.read()
                try:
                        from_json(json.loads(t), found, sims)
                except ValueError:
                        from_text(t, found, sims)
                for c in found[n:]:
                        origin.setdefault(c, os.path.basename(p))
        uniq = []
        for c in found:
                if c and c not in uniq:
                        uniq.append(c)
        return uniq, sorted(set(sims)), origin


# ---- running -------------------------------------------------------------------------------
def takes(gv, sub, opt):
        if sub not in TAKES:
                r = subprocess.run([gv, "help", sub], capture_output=True, text=True, timeout=30)
                TAKES[sub] = set(re.findall(r"--[a-z][a-z-]*", r.stdout))
        return opt in TAKES[sub]


def alive(pid):
        try:
                with open("/proc/%s/stat" % pid) as f:
                        st = f.read().rsplit(")", 1)[1].split()
                return st[0] != "Z"
        except (OSError, IndexError):
                return False


class Runner:
        def __init__(self, a):
                self.a = a
                self.tmp = tempfile.mkdtemp(prefix="gv-pc.")
                self.extra = json.loads(a.extra) if a.extra else []
                self.user_prefix = json.loads(a.user_prefix) if a.user_prefix else []

        def placeholder(self, w):
                v = PLACEHOLDERS[w]
                if v is not None:
                        return v
                if w in ("PID", "P"):
                        return str(self.a.spare_pid)
                return tempfile.mkdtemp(dir=self.tmp)

        def ghostvram(self, words, env, as_root):
                """Returns (status text, failed?)."""
                args, ph = [], False
                for w in words[1:]:
                        if w in PLACEHOLDERS:
                                w, ph = self.placeholder(w), True
                        args.append(w)
                sub = args[0] if args else ""
                if sub in ("-y", "--yes"):
                        return "no subcommand", True
                if sub == "reclaim":
                        args = [("--dry-run" if w in ("--yes", "-y") else w) for w in args]
                else:
                        args = [w for w in args if w not in ("--yes", "-y")]
                parse_only = sub in PARSE_ONLY or args[:2] == ["sim", "init"] or "--help" in args
                if parse_only:
                        args.append("--help")
                else:
                        if sub == "top":
                                args += [o for o in ("--batch",) if o not in args] + \
                                        ([] if "--iterations" in args else ["--iterations", "1"])
                        if sub == "watch":
                                args += ([] if "--count" in args else ["--count", "2"]) + \
                                        ([] if "--interval" in args else ["--interval", "200ms"])
                        if sub == "xid":
                                args = [w for w in args if w not in ("--follow", "-f")]
                        if sub in ("scan", "check", "reclaim") and "--confirm" not in args:
                                args += ["--confirm", "300ms"]
                        i = 0
                        while i < len(self.extra):
                                opt = self.extra[i]
                                val = self.extra[i + 1] if i + 1 < len(self.extra) and not self.extra[i + 1].startswith("--") else None
                                i += 2 if val is not None else 1
                                if sub and takes(self.a.bin, sub, opt) and opt not in args:
                                        args += [opt] + ([val] if val is not None else [])
                gv = self.a.bin if as_root or not self.a.user_bin else self.a.user_bin
                argv = ([] if as_root else self.user_prefix) + ["env"] + ["%s=%s" % kv for kv in env.items()] + [gv] + args
                full = dict(os.environ)
                full.pop("GHOSTVRAM_SIM", None)
                try:
                        r = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=full,
                                           stdin=subprocess.DEVNULL,
                                           errors="surrogateescape", start_new_session=True)
                except subprocess.TimeoutExpired:
                        return "timed out (60 s): ghostvram " + " ".join(args), True
                rc = r.returncode
                shown = "ghostvram " + " ".join(args)
                if args[:2] == ["sim", "run"] and rc == 0:
                        for line in r.stdout.split("\n"):  # the job it started is ours to end
                                p = line.split()
                                if len(p) == 2 and p[1].isdigit():
                                        try:
                                                os.kill(int(p[1]), signal.SIGKILL)
                                        except OSError:
                                                pass
                err = (r.stderr.strip().split("\n") or [""])[-1][:300]
                if rc == 2 and sub != "check":
                        return "exit 2, a usage error: %s [%s]" % (err, shown), True
                if sub == "check" and rc == 3 and re.search(r"option|usage|argument", r.stdout + r.stderr, re.I):
                        return "check UNKNOWN about its command line: %s [%s]" % (r.stdout.strip()[:300], shown), True
                if sub == "reclaim" and rc == 3 and not ph:
                        why = (r.stdout + r.stderr).strip().split("\n")
                        return "exit 3, refused: %s [%s]" % (" / ".join(why[-3:])[:400], shown), True
                if rc < 0 or rc > 3:
                        return "exit %d (signal or crash): %s [%s]" % (rc, err, shown), True
                return "exit %d%s [%s]" % (rc, " (placeholders given values)" if ph else "", shown), False

        def host(self, words):
                name = words[0]
                if name not in HOST_TOOLS:
                        return "'%s' is no command the printers may name (an unquoted path split?)" % name, True
                if name == "kill":
                        sig = [w for w in words[1:] if w.startswith("-")]
                        pids = [w for w in words[1:] if not w.startswith("-")]
                        if not pids or not all(p.isdigit() for p in pids):
                                return "kill without PIDs", True
                        for s in sig:
                                if subprocess.run(["bash", "-c", "kill -l %s" % s[1:]], capture_output=True).returncode:
                                        return "kill: no signal %s" % s, True
                        dead = [p for p in pids if not alive(p)]
                        if dead:
                                return "kill names processes that are gone: %s" % " ".join(dead), True
                        return "not run (host command): signal and PIDs checked", False
                if name == "cat":
                        missing = [w for w in words[1:] if not os.path.exists(os.path.dirname(w) or ".")]
                        if missing:
                                return "cat: no %s" % " ".join(missing), True
                        return "not run (host command): its file's directory exists", False
                return "not run (host command): a known tool, literal words", False

        def run(self, cmd):
                try:
                        parts = shell_split(cmd)
                except Unsafe as e:
                        return "not a literal command: %s" % e, True
                if not parts:
                        return "empty", True
                res = []
                for words in parts:
                        env, as_root = {}, False
                        while words and words[0] == "sudo":
                                words, as_root = words[1:], True
                        while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
                                k, v = words[0].split("=", 1)
                                env[k] = v
                                words = words[1:]
                        if "GHOSTVRAM_SIM" in env and env["GHOSTVRAM_SIM"] != self.a.sim:
                                return "GHOSTVRAM_SIM=%r is not this host's %r" % (env["GHOSTVRAM_SIM"], self.a.sim), True
                        if not words:
                                return "an assignment without a command", True
                        if self.a.sim and "GHOSTVRAM_SIM" not in env and not any(
                                        e == "--from-bundle" for e in self.extra):
                                env["GHOSTVRAM_SIM"] = self.a.sim
                        if words[0] == "ghostvram":
                                t, bad = self.ghostvram(words, env, as_root)
                        else:
                                t, bad = self.host(words)
                        res.append(t)
                        if bad:
                                return "; ".join(res), True
                return "; ".join(res), False


def main():
        ap = argparse.ArgumentParser()
        ap.add_argument("mode", choices=["check", "collect"])
        ap.add_argument("--situation", default="")
        ap.add_argument("--bin", default="")
        ap.add_argument("--user-bin", default="")
        ap.add_argument("--user-prefix", default="", help="JSON list: argv prefix for commands without sudo")
        ap.add_argument("--sim", default="")
        ap.add_argument("--extra", default="", help="JSON list of options the host needs")
        ap.add_argument("--spare-pid", type=int, default=0)
        ap.add_argument("--min", type=int, default=1, help="fewest commands expected")
        ap.add_argument("--partial-view", action="store_true",
                        help="the printer sees only part of the processes: offering a reset is wrong")
        ap.add_argument("outputs", nargs="+")
        a = ap.parse_args()
        cmds, sims, origin = collect(a.outputs)
        if a.mode == "collect":
                for c in cmds:
                        print(json.dumps(c))
                return 0
        r = Runner(a)
        fails, known = 0, 0
        matched = {}  # KNOWN_FAILURES entry -> [commands it named, how many failed]
        print("== situation %s: %d printed command(s), %d GHOSTVRAM_SIM word(s)" % (a.situation, len(cmds), len(sims)))
        for w in sims:
                bad = w != a.sim
                print("  %s  banner GHOSTVRAM_SIM=%r" % ("FAIL" if bad else "ok  ", w))
                fails += bad
        if a.partial_view:
                # a view that cannot see every holder must never lead to a reset (scan says so:
                # "never reset a GPU on this view"), save where the user asked for one (reset*, uvm*)
                for p in a.outputs:
                        if re.match(r"(reset|uvm)", os.path.basename(p)):
                                continue
                        with open(p, encoding="utf-8", errors="surrogateescape") as f:
                                for line in f:
                                        if re.search(r"--reset-gpu|--reload-uvm|--gpu-reset", line):
                                                c = "reset offered: " + line.strip()[:300]
                                                if c not in cmds:
                                                        cmds.append(c)
                                                        origin[c] = os.path.basename(p)
        for c in cmds:
                if c.startswith("reset offered: "):
                        text, bad = "a reset offered on a partial view (not root)", True
                else:
                        text, bad = r.run(c)
                k = next((why for s, rx, why in KNOWN_FAILURES if re.search(s, a.situation) and re.search(rx, c)), None)
                if k:
                        m = matched.setdefault(k, [0, 0])
                        m[0] += 1
                        m[1] += bad
                if k and bad:
                        print("  KNOWN %s   (%s)\n        -> %s\n        (%s)" % (c, origin[c], text, k))
                        known += 1
                        continue
                print("  %s  %s   (%s)\n        -> %s" % ("FAIL" if bad else "ok  ", c, origin[c], text))
                fails += bad
        for k, (n, nbad) in matched.items():
                if nbad == 0:
                        print("  FAIL  KNOWN_FAILURES lists '%s' here, but its %d command(s) all pass: remove the entry" % (k, n))
                        fails += 1
        if len(cmds) < a.min:
                print("  FAIL  only %d command(s) collected, expected at least %d" % (len(cmds), a.min))
                fails += 1
        print("== %s: %d failed, %d known" % (a.situation, fails, known))
        return 1 if fails else 0


if __name__ == "__main__":
        sys.exit(main())
