package sample

import "testing"

func TestProgramName(t *testing.T) {
	for _, tc := range []struct {
		name      string
		p         Process
		parentExe string
		want      string
	}{
		{"exe untruncates comm", Process{Comm: "systemd-journal", Exe: "systemd-journald"}, "", "systemd-journald"},
		{"same names", Process{Comm: "sshd", Exe: "sshd"}, "", "sshd"},
		{"renamed helper of same exe", Process{Comm: "Web Content", Exe: "firefox-esr"}, "firefox-esr", "firefox-esr"},
		{"renamed, parent differs", Process{Comm: "Web Content", Exe: "firefox-esr"}, "systemd", "Web Content"},
		{"exe unreadable", Process{Comm: "postgres"}, "", "postgres"},
		{"script", Process{Comm: "app.py", Exe: "python3.11", Script: "app.py"}, "", "app.py [python3.11]"},
		{"deleted", Process{Comm: "nginx", Exe: "nginx", ExeDeleted: true}, "", "nginx [deleted]"},
		{"script deleted interpreter", Process{Comm: "x", Exe: "bash", Script: "x.sh", ExeDeleted: true}, "", "x.sh [bash] [deleted]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ProgramName(&tc.p, tc.parentExe); got != tc.want {
				t.Errorf("ProgramName = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestScriptOf(t *testing.T) {
	for _, tc := range []struct {
		exe, cmdline, want string
	}{
		{"python3.11", "/usr/bin/python3\x00/srv/app.py\x00--port\x008080\x00", "app.py"},
		{"python3.11", "python3\x00-u\x00-W\x00ignore\x00worker.py\x00", "worker.py"},
		{"python3.11", "python3\x00-m\x00http.server\x00", "http.server"},
		{"python3.11", "python3\x00-c\x00print(1)\x00", ""},
		{"python3.11", "python3\x00", ""},
		{"bash", "-bash\x00", ""},
		{"bash", "/bin/bash\x00/usr/local/bin/backup.sh\x00", "backup.sh"},
		{"bash", "bash\x00/dev/fd/3\x00", ""},
		{"bash", "bash\x00-c\x00sleep 1\x00", ""},
		{"node", "node\x00--require\x00ts-node/register\x00server.ts\x00", "server.ts"},
		{"perl", "perl\x00-e\x00print 1\x00", ""},
		{"ruby", "ruby\x00--\x00script.rb\x00", "script.rb"},
		// Combined short options holding the code option run code
		// from the command line, as -c alone does: the name came from
		// a piece of the command string ("null [dash]").
		{"dash", "sh\x00-ec\x00sleep 30; echo x >/dev/null\x00", ""},
		{"bash", "bash\x00-lc\x00exec sleep 30 </dev/null\x00", ""},
		{"bash", "bash\x00-xeuc\x00make -C /srv/build\x00", ""},
		{"bash", "bash\x00-ce\x00true\x00", ""},
		{"python3.11", "python3\x00-uc\x00import time; time.sleep(30)\x00", ""},
		{"python3.11", "python3\x00-Bc\x00print(1)\x00", ""},
		{"perl", "perl\x00-ne\x00print if /x/\x00file.txt\x00", ""},
		{"perl", "perl\x00-MData::Dumper\x00-e\x001\x00", ""},
		{"node", "node\x00-pe\x00process.version\x00", ""},
		{"php8.2", "php\x00-r\x00echo 1;\x00", ""},
		// Combined options without it still name the script.
		{"bash", "bash\x00-eu\x00/srv/deploy.sh\x00", "deploy.sh"},
		{"dash", "sh\x00-e\x00/usr/sbin/backup\x00", "backup"},
		{"python3.11", "python3\x00-uB\x00/srv/worker.py\x00", "worker.py"},
		{"python3.11", "python3\x00-mhttp.server\x00", "http.server"},
		{"python3.11", "python3\x00-Wignore\x00app.py\x00", "app.py"},
		{"bash", "bash\x00-o\x00pipefail\x00run.sh\x00", "run.sh"},
		{"bash", "bash\x00+o\x00posix\x00run.sh\x00", "run.sh"},
		{"perl", "perl\x00-Ilib\x00-w\x00tool.pl\x00", "tool.pl"},
		// What cannot be a file's name is a command string.
		{"bash", "bash\x00echo a; sleep 1\x00", ""},
		{"python3.11", "python3\x00print(1)\nprint(2)\x00", ""},
	} {
		if got := string(ScriptOf(tc.exe, []byte(tc.cmdline))); got != tc.want {
			t.Errorf("ScriptOf(%q, %q) = %q, want %q", tc.exe, tc.cmdline, got, tc.want)
		}
	}
}

func TestIsInterpreter(t *testing.T) {
	for exe, want := range map[string]bool{
		"python3.11": true, "python": true, "perl5.36.0": true, "bash": true, "sh": true, "node": true,
		"shred": false, "nodemon": false, "sshd": false, "": false, "pythonista": false,
	} {
		if got := IsInterpreter(exe); got != want {
			t.Errorf("IsInterpreter(%q) = %v, want %v", exe, got, want)
		}
	}
}

func FuzzScriptOf(f *testing.F) {
	f.Add("python3", "python3\x00-m\x00")
	f.Add("bash", "bash\x00--\x00")
	f.Fuzz(func(t *testing.T, exe, cmdline string) {
		ScriptOf(exe, []byte(cmdline))
	})
}

func TestExeBase(t *testing.T) {
	for _, tc := range []struct {
		link, base string
		deleted    bool
	}{
		{"/usr/bin/python3.11", "python3.11", false},
		{"/usr/sbin/sshd (deleted)", "sshd", true},
		{"/memfd:runc_cloned:/proc/self/exe (deleted)", "", false},
		{"/memfd:sealed-app (deleted)", "", false},
		{"/opt/app/my server", "my server", false},
		{"/opt/app/memfd:x", "memfd:x", false},
		{"relative", "", false},
		{"anon_inode:[x]", "", false},
	} {
		base, deleted := ExeBase([]byte(tc.link))
		if string(base) != tc.base || deleted != tc.deleted {
			t.Errorf("ExeBase(%q) = %q, %v; want %q, %v", tc.link, base, deleted, tc.base, tc.deleted)
		}
	}
}

func TestExeFromCmdline(t *testing.T) {
	for _, tc := range []struct {
		comm, cmdline, want string
	}{
		{"python3", "/usr/bin/python3.11\x00app.py\x00", "python3.11"},
		{"systemd-journal", "/usr/lib/systemd/systemd-journald\x00", "systemd-journald"},
		{"python3", "python3\x00-c\x00pass\x00", "python3"},
		{"postgres", "postgres: checkpointer \x00\x00\x00", ""},
		{"sshd", "sshd: alice@pts/0\x00", ""},
		{"Web Content", "/usr/lib/firefox/firefox\x00-contentproc\x00", ""},
		{"runc:[2:INIT]", "runc\x00init\x00", ""},
		{"x", "", ""},
		{"", "/bin/sh\x00", ""},
	} {
		if got := string(ExeFromCmdline(tc.comm, []byte(tc.cmdline))); got != tc.want {
			t.Errorf("ExeFromCmdline(%q, %q) = %q, want %q", tc.comm, tc.cmdline, got, tc.want)
		}
	}
}

// TestScriptOfAllocs: ScriptOf runs for every interpreter process of
// every walk, and allocates nothing (a table of families built per call
// cost 8 allocations, which TestScanReuse of package engine caught).
func TestScriptOfAllocs(t *testing.T) {
	for _, tc := range []struct{ exe, cmdline string }{
		{"python3.11", "python3\x00-u\x00/srv/app.py\x00"},
		{"bash", "bash\x00-ec\x00sleep 1; true\x00"},
		{"perl", "perl\x00-Ilib\x00tool.pl\x00"},
	} {
		cl := []byte(tc.cmdline)
		if n := testing.AllocsPerRun(100, func() { ScriptOf(tc.exe, cl) }); n != 0 {
			t.Errorf("ScriptOf(%q, %q): %v allocations, want 0", tc.exe, tc.cmdline, n)
		}
	}
}
