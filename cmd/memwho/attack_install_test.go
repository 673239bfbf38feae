package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"
)

// The attacks of the security review (docs/safe.md, "An adversarial review"), each
// run against the capability-installed binary as the unprivileged test
// user; each test asserts the attack fails. Two failed on the tree the
// review started from (a message written to stderr while capabilities
// were still held): see the table.

// hostileScriptName is a file name no terminal should see raw: a right-to-left
// override, an OSC title sequence ending in BEL, a lone 0x9b byte (the
// 8-bit CSI) and a newline.
const hostileScriptName = "\u202eevil\x1b]0;pwn\x07\x9b31m\nx.sh"

// ownDir makes a directory of e.dir owned by the test user.
func (e *privEnv) ownDir(t *testing.T, name string) string {
	t.Helper()
	d := mustMkdir(t, filepath.Join(e.dir, name))
	if err := os.Chown(d, e.user.UID, e.user.GID); err != nil {
		t.Fatal(err)
	}
	return d
}

// closedDir makes a root-owned 0700 directory of e.dir.
func (e *privEnv) closedDir(t *testing.T, name string) string {
	t.Helper()
	d := mustMkdir(t, filepath.Join(e.dir, name))
	if err := os.Chmod(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

// startRootScript starts "sh DIR/name" as root (a script that sleeps)
// and returns the shell's PID; it is killed at cleanup. With hugeArgs > 0
// the script gets that many arguments of 120 KiB each (the stack limit
// raised so that the kernel accepts them).
func startRootScript(t *testing.T, dir, name string, hugeArgs int) int {
	t.Helper()
	script := filepath.Join(dir, name)
	// Not "exec sleep", which would rename the process: the shell
	// waits, with sleep as its child.
	if err := os.WriteFile(script, []byte("echo ready\nsleep 600\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := exec.Command("sh", script)
	if hugeArgs > 0 {
		c = exec.Command("sh", "-c", `a=$(head -c 122880 /dev/zero | tr '\0' A); set --
i=0; while [ $i -lt `+strconv.Itoa(hugeArgs)+` ]; do set -- "$@" "$a"; i=$((i+1)); done
ulimit -s 262144 && exec sh "$0" "$@"`, script)
	}
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		c.Wait()
	})
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("root script: %q, %v", line, err)
	}
	return c.Process.Pid
}

// unshareWorks reports whether the test user may create a user namespace.
func (e *privEnv) unshareWorks(t *testing.T) bool {
	t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		return false
	}
	out, code := e.runSh(t, nil, `unshare -Urm true`)
	if code != 0 {
		t.Logf("unshare -Urm as the test user: %s", out)
		return false
	}
	return true
}

// logRun logs a trimmed run, so that -v shows what each attack got.
func logRun(t *testing.T, what, out string, code int) {
	t.Helper()
	if len(out) > 400 {
		out = out[:400] + "..."
	}
	t.Logf("%s: exit %d: %q", what, code, out)
}

// exactFor reports whether out (a --json report) shows pid with exact
// figures.
func exactFor(out string, pid int) bool {
	re := regexp.MustCompile(`"pids":\[` + strconv.Itoa(pid) + `\][^}]*"accuracy":"exact"`)
	return re.MatchString(out)
}

func (e *privEnv) checkInstallAttacks(t *testing.T) {
	secret := e.secret(t)
	target := strconv.Itoa(e.target)

	// The installed file: exactly the two capabilities, effective and
	// permitted, nothing inheritable; not runnable outside the group.
	t.Run("install: installed file and who may run it", func(t *testing.T) {
		if _, err := exec.LookPath("getcap"); err != nil {
			t.Skip("getcap (libcap2-bin) is missing")
		}
		out, err := exec.Command("getcap", e.bin).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != e.bin+" cap_dac_read_search,cap_sys_ptrace=p" {
			t.Errorf("getcap %s: %q, %v", e.bin, out, err)
		}
		// Through a shell: setpriv itself still holds root's
		// capabilities when it executes its command (they go only at
		// that exec), so "setpriv --reuid=nobody -- memwho" passes the
		// kernel's permission check on the file as root would.
		for _, who := range [][]string{
			{"--reuid=nobody", "--regid=nogroup", "--clear-groups"},
			{"--reuid=" + e.user.Name, "--regid=" + strconv.Itoa(e.user.GID), "--clear-groups"},
		} {
			c := exec.Command("setpriv", append(who, "--", "sh", "-c", `exec "$0" version`, e.bin)...)
			c.Env = []string{"PATH=/usr/bin:/bin"}
			if b, err := c.CombinedOutput(); err == nil || !strings.Contains(string(b), "ermission denied") {
				t.Errorf("%v (not in the group) ran memwho: %v: %s", who, err, b)
			}
		}
	})

	// --proc spelled other than "/proc": the same procfs, but the
	// policy compares the flag's value, so it must keep nothing (and
	// so show estimates for root's process) rather than resolve paths
	// with capabilities.
	t.Run("install: /proc spellings keep no capability", func(t *testing.T) {
		for _, p := range []string{"/proc/", "/proc/.", "//proc", "/proc/../proc", "/proc/self/..", "/proc/1/.."} {
			out, code := e.runSh(t, nil, `exec "$M" --by pid -p `+target+` --json --proc `+p)
			logRun(t, p, out, code)
			if exactFor(out, e.target) {
				t.Errorf("--proc %s: root's process shown exact (capabilities kept for a path other than /proc):\n%s", p, out)
			}
		}
		// Premise: plain /proc is exact.
		if out, _ := e.runSh(t, nil, `exec "$M" --by pid -p `+target+` --json`); !exactFor(out, e.target) {
			t.Errorf("premise: --proc /proc is not exact:\n%s", out)
		}
	})

	// User namespaces: the file capabilities apply inside a user
	// namespace the user made, but only over that namespace; as its
	// "root" memwho thinks it runs as root and drops nothing. None of
	// that may reach the host's root-owned processes or files.
	t.Run("install: user namespace", func(t *testing.T) {
		if !e.unshareWorks(t) {
			t.Skip("the test user cannot create user namespaces here")
		}
		own := e.ownDir(t, "own-userns")
		fake, pids := e.fakeTree(t, "userns-fake")
		linkAll(t, pids, "comm", secret)
		linkAll(t, pids, "status", secret)
		etcX := "/etc/memwho-refused-" + strconv.Itoa(os.Getpid())
		t.Cleanup(func() { os.Remove(etcX) })
		closed := e.closedDir(t, "closed-userns")
		for _, script := range []string{
			// ns-root with the host /proc: root's process stays estimated.
			`exec unshare -Ur sh -c 'exec "$M" --by pid -p ` + target + ` --json'`,
			`exec unshare -Ur sh -c 'exec "$M" --conns --by pid -p ` + target + ` --json'`,
			`exec unshare -Ur sh -c 'exec "$M" watch --plain --count 1 --by pid'`,
			// a fake tree bind-mounted over /proc in the namespace.
			`exec unshare -Urm sh -c 'mount --bind ` + fake + ` /proc && exec "$M" --by pid'`,
			`exec unshare -Urm sh -c 'mount --bind ` + fake + ` /proc && exec "$M" --conns --by pid --json'`,
			`exec unshare -Urm sh -c 'mount --bind ` + fake + ` /proc && exec "$M" serve --once'`,
			// a procfs of a new PID namespace: real, and hiding nothing.
			`exec unshare -Urpf --mount-proc sh -c 'exec "$M" --by pid --json'`,
			// files as ns-root: root-owned on the host stays theirs.
			`exec unshare -Ur sh -c '"$M" --cpuprofile ` + etcX + ` -p 1; "$M" --memprofile ` + closed + `/x -p 1; "$M" export --db ` + secret + ` -o ` + own + `/x.csv; "$M" leaks --db ` + secret + `; cat ` + secret + `'`,
		} {
			out, code := e.runSh(t, nil, script)
			logRun(t, script, out, code)
			if strings.Contains(out, secretText) {
				t.Errorf("%s: printed the root-only file:\n%s", script, out)
			}
			if exactFor(out, e.target) {
				t.Errorf("%s: root's process exact from inside a user namespace:\n%s", script, out)
			}
			if strings.Contains(script, "--mount-proc") && strings.Contains(out, "["+target+"]") {
				t.Errorf("%s: a new PID namespace's procfs showed the host's process %s:\n%s", script, target, out)
			}
		}
		for _, p := range []string{etcX, filepath.Join(closed, "x")} {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s was created from a user namespace", p)
			}
		}
	})

	// A running memwho that holds capabilities (watch keeps them for
	// its whole run): the user must not get at it — no ptrace, no
	// memory, no environ, no fds, no core dump, no traceback — and it
	// must hold exactly what the policy says on every thread.
	t.Run("install: running watch is not the user's to inspect", e.checkWatchInspect)

	// Environment variables that name files, read lazily by the Go
	// library while watch --conns holds CAP_DAC_READ_SEARCH: a zone file
	// behind a 0700 directory must not be loaded.
	t.Run("install: TZ and ZONEINFO naming a closed file", func(t *testing.T) {
		zone := "/usr/share/zoneinfo/Asia/Kathmandu"
		if _, err := os.Stat(zone); err != nil {
			t.Skip("no tzdata")
		}
		closed := e.closedDir(t, "closed-tz")
		if err := privtestCopy(zone, filepath.Join(closed, "Kathmandu")); err != nil {
			t.Fatal(err)
		}
		// Premise: as root the zone is used (+05:45 in the header).
		c := exec.Command(e.bin, "watch", "--plain", "--count", "1")
		c.Env = []string{"TZ=" + filepath.Join(closed, "Kathmandu")}
		if b, _ := c.Output(); !strings.Contains(string(b), "+05:45") {
			t.Logf("premise: root's header does not show the zone: %.80q", b)
		}
		for _, env := range [][]string{
			{"TZ=" + filepath.Join(closed, "Kathmandu")},
			{"TZ=:" + filepath.Join(closed, "Kathmandu")},
			{"TZ=Kathmandu", "ZONEINFO=" + closed},
			{"TZ=../../../../../../" + closed + "/Kathmandu"},
		} {
			for _, flags := range []string{"watch --plain --count 1 --conns", "watch --plain --count 1"} {
				out, code := e.runSh(t, env, `exec "$M" `+flags)
				logRun(t, fmt.Sprint(env, flags), out, code)
				if strings.Contains(out, "+05:45") {
					t.Errorf("%v memwho %s loaded a zone file behind a 0700 directory:\n%.200s", env, flags, out)
				}
			}
		}
	})

	// The agent's and the history commands' paths, from the
	// capability binary: each is opened as the user.
	t.Run("install: serve socket and web-config paths", func(t *testing.T) {
		own := e.ownDir(t, "own-serve")
		closed := e.closedDir(t, "closed-serve")
		rootFile := filepath.Join(e.dir, "root-regular")
		os.WriteFile(rootFile, []byte("keep\n"), 0o644)
		etcSock := "/etc/memwho-refused-" + strconv.Itoa(os.Getpid()) + ".sock"
		t.Cleanup(func() { os.Remove(etcSock) })
		for _, args := range []string{
			"serve --listen 127.0.0.1:0 --web-config " + secret,
			"serve --socket " + etcSock,
			"serve --socket " + closed + "/s.sock",
			"serve --socket " + rootFile,
			"serve --socket " + own + "/a.sock --debug-socket " + closed + "/d.sock",
			"serve --socket " + own + "/b.sock --debug-socket " + etcSock,
			"serve --socket " + own + "/c.sock --socket-group root",
			"serve --socket " + own + "/d.sock --debug-socket " + own + "/e.sock --debug-socket-group root",
		} {
			// A serve that starts would run for ever: timeout is only
			// the hang guard, and a start is the failure.
			out, code := e.runSh(t, []string{"MEMWHO_WEB_CONFIG="}, `exec timeout 20 "$M" `+args)
			logRun(t, args, out, code)
			if code == 124 || code == 0 {
				t.Errorf("memwho %s started (exit %d):\n%s", args, code, out)
			}
			if strings.Contains(out, secretText) {
				t.Errorf("memwho %s printed the root-only file:\n%s", args, out)
			}
		}
		for _, p := range []string{etcSock, filepath.Join(closed, "s.sock"), filepath.Join(closed, "d.sock")} {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s was created", p)
			}
		}
		if b, _ := os.ReadFile(rootFile); string(b) != "keep\n" {
			t.Errorf("a root-owned file at --socket was changed: %q", b)
		}
		for _, s := range []string{"c.sock", "e.sock"} {
			var st syscall.Stat_t
			if syscall.Lstat(filepath.Join(own, s), &st) == nil && st.Gid == 0 {
				t.Errorf("%s was given to group root", s)
			}
		}
	})

	t.Run("install: history database and output paths", func(t *testing.T) {
		own := e.ownDir(t, "own-hist")
		db := filepath.Join(own, "h.db")
		if out, code := e.runSh(t, nil, `exec "$M" record --once --db `+db); code != 0 {
			t.Fatalf("record --once into the user's directory: exit %d\n%s", code, out)
		}
		// A world-writable sticky directory with a root-owned file in
		// it: the user may create files there but not replace root's.
		sticky := mustMkdir(t, filepath.Join(e.dir, "sticky"))
		if err := syscall.Chmod(sticky, 0o1777); err != nil {
			t.Fatal(err)
		}
		rootOut := filepath.Join(sticky, "root-owned.csv")
		os.WriteFile(rootOut, []byte("keep\n"), 0o644)
		// A symlink of the user's own pointing at a root-only file.
		link := filepath.Join(own, "link.csv")
		os.Symlink(secret, link)
		os.Lchown(link, e.user.UID, e.user.GID)
		fifo := filepath.Join(own, "fifo.db")
		syscall.Mkfifo(fifo, 0o666)
		os.Chown(fifo, e.user.UID, e.user.GID)
		closed := e.closedDir(t, "closed-hist")
		// A spool directory of root's, holding a root-owned file named
		// like a leftover temporary file the spool removes.
		spool := mustMkdir(t, filepath.Join(e.dir, "spool"))
		if err := syscall.Chmod(spool, 0o1777); err != nil {
			t.Fatal(err)
		}
		leftover := filepath.Join(spool, ".x.sample.json.tmp-0123456789abcdef")
		os.WriteFile(leftover, []byte("keep\n"), 0o644)
		for _, tc := range []struct {
			env  []string
			args string
		}{
			{nil, "record --once --db " + secret},
			{nil, "record --once --db " + closed + "/h.db"},
			{nil, "record --once --db /etc/memwho-refused.db"},
			{nil, "record --once --db /dev/zero"},
			{nil, "record --once --db " + fifo},
			{nil, "leaks --db " + secret},
			{nil, "leaks --db /dev/zero"},
			{nil, "leaks --db " + fifo},
			{[]string{"MEMWHO_DB=" + secret}, "leaks"},
			{nil, "export --db " + secret + " -o " + own + "/x.csv"},
			{nil, "export --db " + db + " -o " + rootOut},
			{nil, "export --db " + db + " -o " + link},
			{nil, "export --db " + db + " -o " + closed + "/x.csv"},
			{nil, "export --db " + db + " -o /etc/memwho-refused.csv"},
			{nil, "export --db " + db + " -o /dev/stdout"},
			{nil, "record --once --db postgres://memwho@127.0.0.1:1/x?connect_timeout=2 --spool " + spool},
			{nil, "record --once --db postgres://memwho@127.0.0.1:1/x?connect_timeout=2 --spool " + closed + "/spool"},
		} {
			out, code := e.runSh(t, tc.env, `exec timeout 60 "$M" `+tc.args)
			logRun(t, fmt.Sprint(tc.env, tc.args), out, code)
			if code == 124 {
				t.Errorf("%v memwho %s blocked", tc.env, tc.args)
			}
			if strings.Contains(out, secretText) {
				t.Errorf("%v memwho %s printed the root-only file:\n%s", tc.env, tc.args, out)
			}
		}
		if b, _ := os.ReadFile(secret); string(b) != secretText+"\n" {
			t.Errorf("the root-only file was changed: %q", b)
		}
		if b, _ := os.ReadFile(rootOut); string(b) != "keep\n" {
			t.Errorf("export replaced a root-owned file in a sticky directory: %q", b)
		}
		if b, _ := os.ReadFile(leftover); string(b) != "keep\n" {
			t.Errorf("record's spool removed root's file: %q", b)
		}
		for _, p := range []string{"/etc/memwho-refused.db", "/etc/memwho-refused.csv", filepath.Join(closed, "h.db"), filepath.Join(closed, "x.csv"), filepath.Join(closed, "spool")} {
			if _, err := os.Lstat(p); err == nil {
				os.RemoveAll(p)
				t.Errorf("%s was created", p)
			}
		}
		if st, err := os.Lstat(link); err == nil && st.Mode()&os.ModeSymlink == 0 {
			// export replaced the user's own symlink with a file:
			// that is the user's directory, and root's file is intact.
			t.Logf("export -o over the user's symlink replaced the link (root's file intact)")
		}
	})

	// Names a user controls (a script's file name) through every
	// output of every command: no raw escape, BEL, bidi override, C1
	// control or invalid UTF-8 reaches the terminal, and the row is on
	// one line.
	t.Run("install: hostile script name in every output", func(t *testing.T) {
		dir := mustMkdir(t, filepath.Join(e.dir, "hostile-script"))
		pid := startRootScript(t, dir, hostileScriptName, 0)
		p := strconv.Itoa(pid)
		own := e.ownDir(t, "own-names")
		db := filepath.Join(own, "n.db")
		for _, args := range []string{
			"--by pid -p " + p,
			"--by pid -p " + p + " --json",
			"--by pid -p " + p + " --csv",
			"-p " + p,
			"-p " + p + " --json",
			"watch --plain --count 1 --by pid",
			"watch --plain --count 1",
			"serve --once --top-processes 1000",
			"serve --once --by program",
			"record --once -v --db " + db,
			"leaks --db " + db + " --window 1h --min-growth 0",
			"leaks --db " + db + " --window 1h --min-growth 0 --json",
			"export --db " + db + " -o -",
			"export --db " + db + " --table samples -o -",
		} {
			out, code := e.runSh(t, nil, `exec "$M" `+args+` 2>&1`)
			logRun(t, args, out, code)
			if i := strings.IndexAny(out, "\x1b\x07\u202e\u009b"); i >= 0 {
				t.Errorf("memwho %s: raw control at %d: %q", args, i, out[max(0, i-40):min(len(out), i+40)])
			}
			if !utf8.ValidString(out) {
				t.Errorf("memwho %s: invalid UTF-8 in the output", args)
			}
			if strings.Contains(out, "\nx.sh") {
				t.Errorf("memwho %s: the name's newline split a row:\n%s", args, out)
			}
		}
		// Premise: the report shows the script's name (escaped).
		if out, _ := e.runSh(t, nil, `exec "$M" --by pid -p `+p); !strings.Contains(out, `evil\x1b]0;pwn\x07`) {
			t.Logf("premise: the report does not name the process by its script: %q", out)
		}
	})

	// Cgroup names are chosen by whoever may create cgroups (a
	// delegated subtree): the same hostile name as a cgroup, through
	// --by cgroup, the agent and the history.
	t.Run("install: hostile cgroup name", func(t *testing.T) {
		// (The kernel refuses a newline in a cgroup's name.)
		const cgName = "\u202eevil\x1b]0;pwn\x07\x9b31m\tcg"
		pid := startRootScript(t, mustMkdir(t, filepath.Join(e.dir, "cg-script")), "cg.sh", 0)
		var made []string
		t.Cleanup(func() {
			for _, d := range made {
				// The process is killed by startRootScript's cleanup,
				// which runs after this one: move it out first.
				os.WriteFile(filepath.Join(filepath.Dir(d), "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
				os.Remove(d)
			}
		})
		for _, h := range []string{"memory", "pids", "systemd", "unified", ""} {
			root := filepath.Join("/sys/fs/cgroup", h)
			if _, err := os.Stat(filepath.Join(root, "cgroup.procs")); err != nil {
				continue
			}
			d := filepath.Join(root, cgName)
			if err := os.Mkdir(d, 0o755); err != nil {
				continue
			}
			made = append(made, d)
			if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
				t.Logf("move into %s: %v", d, err)
			}
		}
		if len(made) == 0 {
			t.Skip("cannot create cgroups here")
		}
		own := e.ownDir(t, "own-cg")
		db := filepath.Join(own, "cg.db")
		found := false
		for _, args := range []string{
			"--by cgroup",
			"--by cgroup --json",
			"--by cgroup --csv",
			"watch --plain --count 1 --by cgroup",
			"serve --once --by cgroup",
			"record --once --db " + db,
			"export --db " + db + " -o -",
			"leaks --db " + db + " --window 1h --min-growth 0 --kind cgroup",
		} {
			out, code := e.runSh(t, nil, `exec "$M" `+args+` 2>&1`)
			logRun(t, args, out, code)
			if strings.Contains(out, "evil") {
				found = true
			}
			if i := strings.IndexAny(out, "\x1b\x07\u202e\u009b"); i >= 0 {
				t.Errorf("memwho %s: raw control at %d: %q", args, i, out[max(0, i-40):min(len(out), i+40)])
			}
			if !utf8.ValidString(out) {
				t.Errorf("memwho %s: invalid UTF-8 in the output", args)
			}
			if strings.Contains(out, "\tcg") {
				t.Errorf("memwho %s: raw tab from the name:\n%s", args, out)
			}
		}
		if !found {
			t.Logf("premise: no output named the cgroup (which hierarchy does memwho read?)")
		}
	})

	// Regular expressions the user writes: Go's RE2 is linear, and a
	// huge compiled program is refused; none may hang the privileged
	// scan.
	t.Run("install: --filter regular expressions", func(t *testing.T) {
		for _, re := range []string{
			`(a*)*$`, `(((a+)+)+)+b`, `(x+x+)+y`, `a{1000}{1000}`, `((a{100}){100}){100}`,
			`(?i)` + strings.Repeat(`[a-z]?`, 1000) + strings.Repeat("a", 1000),
		} {
			for _, cmd := range []string{"", "watch --plain --count 1 "} {
				out, code := e.runSh(t, nil, `exec timeout 60 "$M" `+cmd+`--filter '`+re+`' >/dev/null`)
				if code == 124 {
					t.Errorf("memwho %s--filter %q blocked:\n%s", cmd, re, out)
				}
			}
		}
	})

	// A process with a command line of several MiB (any user can make
	// one): read up to the cap, named, never a hang nor a huge row.
	t.Run("install: huge command line", func(t *testing.T) {
		dir := mustMkdir(t, filepath.Join(e.dir, "hugecmd"))
		// 40 arguments of 120 KiB (each under MAX_ARG_STRLEN): 4.8 MiB,
		// over MaxSmallFile.
		pid := startRootScript(t, dir, "huge.sh", 40)
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err != nil || len(b) < 4<<20 {
			t.Fatalf("premise: the command line is %d bytes (%v)", len(b), err)
		}
		for _, a := range []string{"--by pid -p " + strconv.Itoa(pid), "watch --plain --count 1 --by pid", "serve --once --top-processes 1000"} {
			out, code := e.runSh(t, nil, `exec timeout 60 "$M" `+a)
			logRun(t, a, out, code)
			if code == 124 {
				t.Errorf("memwho %s blocked", a)
			}
			for line := range strings.Lines(out) {
				if len(line) > 4096 {
					t.Errorf("memwho %s: a %d-byte line", a, len(line))
					break
				}
			}
		}
	})

	// The report's capabilities are gone at its first write whatever
	// the options: --conns (both capabilities), --sandbox, --system.
	t.Run("install: report options, capabilities at the first write", func(t *testing.T) {
		e.capsAtWrite(t, 1, "--conns", "--by", "pid")
		e.capsAtWrite(t, 1, "--conns", "--sandbox", "--by", "pid")
		e.capsAtWrite(t, 1, "--system", "--json", "--conns")
		e.capsAtWrite(t, 2, "--conns", "-p", "4194303,1")
	})
	// The --sandbox warning goes to stderr: a pipe the user lets fill
	// up blocks memwho there. It must not hold a capability then.
	t.Run("install: --sandbox warning written with capabilities", func(t *testing.T) {
		e.capsAtWrite(t, 2, "--sandbox", "--by", "pid")
		e.capsAtWrite(t, 2, "--sandbox", "--conns", "--by", "pid")
	})
	// The notice that a hidepid= mount is read with the user's own
	// rights goes to stderr too, before the capabilities are dropped.
	t.Run("install: hidepid notice written with capabilities", func(t *testing.T) {
		if _, err := exec.LookPath("unshare"); err != nil {
			t.Skip("unshare (util-linux) is missing")
		}
		for _, args := range [][]string{{"--by", "pid"}, {"watch", "--plain", "--count", "1"}} {
			c := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c",
				`mount -t proc -o hidepid=2 proc /proc && exec setpriv --reuid=`+e.user.Name+` --regid=`+strconv.Itoa(e.user.GID)+` --init-groups -- "$@"`,
				"sh", e.bin)
			c.Args = append(c.Args, args...)
			c.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "NO_COLOR=1"}
			c.Dir = e.dir
			e.capsAtWriteCmd(t, 2, c, args...)
		}
	})
}

// checkWatchInspect starts watch as the test user and, while its reader
// holds the capabilities, tries to get at both processes as that user: no
// ptrace, no memory, no environ, no fds, no core dump, no traceback. The
// watch itself holds nothing; every thread of its reader, its one child,
// holds exactly what the policy says, and no_new_privs.
func (e *privEnv) checkWatchInspect(t *testing.T) {
	own := e.ownDir(t, "own-watch")
	for _, tc := range []struct {
		flags string
		eff   string
	}{
		// CAP_SYS_PTRACE + CAP_DAC_READ_SEARCH (pagemap, and the
		// fd walk of --conns).
		{"", "0000000000080004"},
		{"--conns", "0000000000080004"},
	} {
		// A fresh output file per run: the last run's frame must not
		// look like this one's (the status would be read before Setup).
		script := `cd ` + own + ` && rm -f w.out && ulimit -c unlimited 2>/dev/null
GOTRACEBACK=crash MEMWHO_SECRET_ENV=` + secretText + `-env "$M" watch --plain --interval 1h ` + tc.flags + ` >w.out 2>&1 &
p=$!
i=0
until grep -q total w.out 2>/dev/null; do sleep 0.05; i=$((i+1)); if [ $i -ge 2400 ]; then echo TIMEOUT; break; fi; done
r=$(cat /proc/$p/task/*/children | tr -d " \n")
echo "READER $r"
for who in $p $r; do
  for s in /proc/$who/task/*/status; do echo "$who" | sed "s/^$p\$/WATCH/; s/^$r\$/READER/" | tr '\n' ' '; grep -E '^(CapInh|CapPrm|CapEff|CapAmb|NoNewPrivs):' $s | tr '\t\n' '  '; echo; done
  for f in environ mem maps smaps auxv stack syscall personality pagemap; do head -c 64 /proc/$who/$f >/dev/null 2>&1 && echo "READ $who $f"; done
  ls /proc/$who/fd >/dev/null 2>&1 && echo "READ $who fd"
  ls /proc/$who/map_files >/dev/null 2>&1 && echo "READ $who map_files"
  readlink /proc/$who/cwd >/dev/null 2>&1 && echo "READ $who cwd"
  readlink /proc/$who/exe >/dev/null 2>&1 && echo "READ $who exe"
done
kill -QUIT $r
kill -QUIT $p
wait $p
echo "EXIT $?"
cat w.out
ls`
		out, code := e.runSh(t, nil, script)
		logRun(t, "watch "+tc.flags, out, code)
		if strings.Contains(out, "TIMEOUT") {
			t.Fatalf("watch %s never printed a frame:\n%s", tc.flags, out)
		}
		if strings.Contains(out, "READER \n") || !strings.Contains(out, "READER ") {
			t.Fatalf("watch %s: no reader child:\n%s", tc.flags, out)
		}
		seen := map[string]bool{}
		for line := range strings.Lines(out) {
			if strings.HasPrefix(line, "READ ") {
				t.Errorf("watch %s: the user could %s", tc.flags, line)
			}
			who, rest, _ := strings.Cut(line, " ")
			if (who != "WATCH" && who != "READER") || !strings.HasPrefix(rest, "CapInh:") {
				continue
			}
			seen[who] = true
			eff := tc.eff
			if who == "WATCH" {
				eff = "0000000000000000"
			}
			f := strings.Fields(rest)
			// CapInh: X CapPrm: X CapEff: X CapAmb: X NoNewPrivs: N
			if len(f) != 10 || f[1] != "0000000000000000" || f[3] != eff || f[5] != eff || f[7] != "0000000000000000" || f[9] != "1" {
				t.Errorf("watch %s: %s thread state %q, want permitted = effective = %s, no inheritable/ambient, no_new_privs", tc.flags, who, rest, eff)
			}
		}
		if !seen["WATCH"] || !seen["READER"] {
			t.Errorf("watch %s: no thread status read of both processes:\n%s", tc.flags, out)
		}
		if strings.Contains(out, "goroutine ") || strings.Contains(out, "rip ") || strings.Contains(out, secretText) {
			t.Errorf("watch %s: SIGQUIT with GOTRACEBACK=crash printed a traceback or the environment:\n%s", tc.flags, out)
		}
		if strings.Contains(out, "core") {
			t.Errorf("watch %s: a core file was written:\n%s", tc.flags, out)
		}
	}
}

// privtestCopy copies a file (root-owned, mode 0644).
func privtestCopy(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
