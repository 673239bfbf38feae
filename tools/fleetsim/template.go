package main

import "time"

// program is one kind of process a simulated host runs: its names, its
// owner and cgroup, how many of it run, how big each is, and how it
// changes.
type program struct {
	name, comm, exe, script string
	uid                     uint32
	cgroup                  string
	// n is the range of how many run at once (drawn per host).
	n [2]int
	// mib is the median PSS of one process in MiB; spread the sigma of
	// its log-normal spread between processes and hosts.
	mib, spread float64
	// private is the fraction of PSS no other process maps.
	private float64
	// life is the mean lifetime of a process (exponential); 0 lives as
	// long as the host. A process that exits is replaced by a new one
	// (new pid and start time), so the count stays in n.
	life time.Duration
	// busy is the probability that a process's figures moved between
	// two samples a minute apart (most processes of a server sit still:
	// the recorder stores their figures unchanged).
	busy float64
	// grow is how much a process grows over its first hours (a JVM
	// heap, a cache filling), as a fraction of its start size; it
	// levels off after about growFor.
	grow    float64
	growFor time.Duration
	// leaky marks the programs a leak is planted in (Fleet.LeakShare).
	leaky bool
	// limit is the cgroup memory limit of its processes in MiB (0: none).
	limit float64
}

// role is a set of programs a host runs besides the base.
type role struct {
	name     string
	programs []program
}

const (
	uidRoot     = 0
	uidMessage  = 101
	uidResolve  = 990
	uidWWW      = 33
	uidPostgres = 115
	uidApp      = 1001
	uidNobody   = 65534
	uidRedis    = 116
	uidAdmin    = 1000
)

// base is what every simulated host runs. Sizes are those of a Debian 12
// server as memwho reports them (PSS); the sessions and cron jobs come
// and go.
var base = []program{
	{name: "systemd", comm: "systemd", exe: "systemd", uid: uidRoot, cgroup: "/init.scope", n: [2]int{1, 1}, mib: 9, spread: 0.2, private: 0.55, busy: 0.05},
	{name: "systemd-journald", comm: "systemd-journal", exe: "systemd-journald", uid: uidRoot, cgroup: "/system.slice/systemd-journald.service", n: [2]int{1, 1}, mib: 24, spread: 0.6, private: 0.4, busy: 0.6, grow: 0.5, growFor: 48 * time.Hour},
	{name: "systemd-udevd", comm: "systemd-udevd", exe: "systemd-udevd", uid: uidRoot, cgroup: "/system.slice/systemd-udevd.service", n: [2]int{1, 1}, mib: 4, spread: 0.2, private: 0.5, busy: 0.01},
	{name: "systemd-logind", comm: "systemd-logind", exe: "systemd-logind", uid: uidRoot, cgroup: "/system.slice/systemd-logind.service", n: [2]int{1, 1}, mib: 3.5, spread: 0.2, private: 0.5, busy: 0.05},
	{name: "systemd-resolved", comm: "systemd-resolve", exe: "systemd-resolved", uid: uidResolve, cgroup: "/system.slice/systemd-resolved.service", n: [2]int{1, 1}, mib: 6, spread: 0.2, private: 0.6, busy: 0.2},
	{name: "systemd-timesyncd", comm: "systemd-timesyn", exe: "systemd-timesyncd", uid: uidResolve, cgroup: "/system.slice/systemd-timesyncd.service", n: [2]int{1, 1}, mib: 3, spread: 0.2, private: 0.5, busy: 0.01},
	{name: "dbus-daemon", comm: "dbus-daemon", exe: "dbus-daemon", uid: uidMessage, cgroup: "/system.slice/dbus.service", n: [2]int{1, 1}, mib: 2.5, spread: 0.2, private: 0.6, busy: 0.05},
	{name: "cron", comm: "cron", exe: "cron", uid: uidRoot, cgroup: "/system.slice/cron.service", n: [2]int{1, 1}, mib: 1.2, spread: 0.1, private: 0.5, busy: 0.01},
	{name: "rsyslogd", comm: "rsyslogd", exe: "rsyslogd", uid: uidRoot, cgroup: "/system.slice/rsyslog.service", n: [2]int{1, 1}, mib: 5, spread: 0.4, private: 0.7, busy: 0.5},
	{name: "sshd", comm: "sshd", exe: "sshd", uid: uidRoot, cgroup: "/system.slice/ssh.service", n: [2]int{1, 1}, mib: 4, spread: 0.1, private: 0.4, busy: 0.01},
	{name: "sshd", comm: "sshd", exe: "sshd", uid: uidAdmin, cgroup: "/user.slice/user-1000.slice/session-3.scope", n: [2]int{0, 4}, mib: 3, spread: 0.2, private: 0.3, life: 40 * time.Minute, busy: 0.3},
	{name: "bash", comm: "bash", exe: "bash", uid: uidAdmin, cgroup: "/user.slice/user-1000.slice/session-3.scope", n: [2]int{0, 4}, mib: 2.5, spread: 0.4, private: 0.7, life: 40 * time.Minute, busy: 0.2},
	{name: "systemd", comm: "systemd", exe: "systemd", uid: uidAdmin, cgroup: "/user.slice/user-1000.slice/user@1000.service/init.scope", n: [2]int{0, 1}, mib: 5, spread: 0.2, private: 0.6, busy: 0.02},
	{name: "(sd-pam)", comm: "(sd-pam)", exe: "systemd", uid: uidAdmin, cgroup: "/user.slice/user-1000.slice/user@1000.service/init.scope", n: [2]int{0, 1}, mib: 1.5, spread: 0.2, private: 0.8, busy: 0},
	{name: "agetty", comm: "agetty", exe: "agetty", uid: uidRoot, cgroup: "/system.slice/system-getty.slice/getty@tty1.service", n: [2]int{1, 2}, mib: 0.4, spread: 0.1, private: 0.4, busy: 0},
	{name: "chronyd", comm: "chronyd", exe: "chronyd", uid: uidResolve, cgroup: "/system.slice/chrony.service", n: [2]int{1, 1}, mib: 1.8, spread: 0.1, private: 0.6, busy: 0.02},
	{name: "polkitd", comm: "polkitd", exe: "polkitd", uid: uidResolve, cgroup: "/system.slice/polkit.service", n: [2]int{1, 1}, mib: 7, spread: 0.2, private: 0.7, busy: 0.01},
	{name: "unattended-upgr", comm: "unattended-upgr", exe: "python3.11", script: "unattended-upgrade-shutdown", uid: uidRoot, cgroup: "/system.slice/unattended-upgrades.service", n: [2]int{1, 1}, mib: 18, spread: 0.1, private: 0.8, busy: 0},
	{name: "node_exporter", comm: "node_exporter", exe: "node_exporter", uid: uidNobody, cgroup: "/system.slice/prometheus-node-exporter.service", n: [2]int{1, 1}, mib: 18, spread: 0.3, private: 0.9, busy: 0.9},
	{name: "memwho-agent", comm: "memwho-agent", exe: "memwho-agent", uid: uidNobody, cgroup: "/system.slice/memwho.service", n: [2]int{1, 1}, mib: 14, spread: 0.2, private: 0.9, busy: 0.9},
	{name: "containerd", comm: "containerd", exe: "containerd", uid: uidRoot, cgroup: "/system.slice/containerd.service", n: [2]int{1, 1}, mib: 40, spread: 0.3, private: 0.9, busy: 0.5},
	{name: "fluent-bit", comm: "fluent-bit", exe: "fluent-bit", uid: uidRoot, cgroup: "/system.slice/fluent-bit.service", n: [2]int{1, 1}, mib: 22, spread: 0.4, private: 0.9, busy: 0.8, grow: 0.3, growFor: 12 * time.Hour, leaky: true},
	// Cron jobs and their shells: short-lived.
	{name: "sh", comm: "sh", exe: "dash", uid: uidRoot, cgroup: "/system.slice/cron.service", n: [2]int{0, 3}, mib: 0.6, spread: 0.2, private: 0.5, life: 3 * time.Minute, busy: 0.1},
	{name: "backup.py [python3.11]", comm: "python3", exe: "python3.11", script: "backup.py", uid: uidRoot, cgroup: "/system.slice/cron.service", n: [2]int{0, 1}, mib: 30, spread: 0.5, private: 0.8, life: 8 * time.Minute, busy: 0.9},
	{name: "logrotate", comm: "logrotate", exe: "logrotate", uid: uidRoot, cgroup: "/system.slice/logrotate.service", n: [2]int{0, 1}, mib: 1.5, spread: 0.2, private: 0.6, life: time.Minute, busy: 0.5},
	// Names as hostile as those of the captured tree names.txtar: an
	// escape sequence, a formula, a name imitating stat's fields.
	{name: "evil\x1b[31mred", comm: "evil\x1b[31mred", exe: "sleep", uid: uidAdmin, cgroup: "/user.slice/user-1000.slice/session-3.scope", n: [2]int{0, 1}, mib: 0.5, spread: 0.1, private: 0.3, life: 2 * time.Hour, busy: 0},
	{name: "=HYPERLINK(\"x\")", comm: "=HYPERLINK(\"x\"", exe: "sleep", uid: uidAdmin, cgroup: "/user.slice/user-1000.slice/session-3.scope", n: [2]int{0, 1}, mib: 0.5, spread: 0.1, private: 0.3, life: 2 * time.Hour, busy: 0},
	{name: ") R 0 0 0", comm: ") R 0 0 0", exe: "sleep", uid: uidAdmin, cgroup: "/user.slice/user-1000.slice/session-3.scope", n: [2]int{0, 1}, mib: 0.5, spread: 0.1, private: 0.3, life: 2 * time.Hour, busy: 0},
}

// roles are what hosts run besides the base, one or two each.
var roles = []role{
	{"web", []program{
		{name: "nginx", comm: "nginx", exe: "nginx", uid: uidRoot, cgroup: "/system.slice/nginx.service", n: [2]int{1, 1}, mib: 3, spread: 0.1, private: 0.3, busy: 0},
		{name: "nginx", comm: "nginx", exe: "nginx", uid: uidWWW, cgroup: "/system.slice/nginx.service", n: [2]int{4, 16}, mib: 9, spread: 0.4, private: 0.5, busy: 0.7, life: 12 * time.Hour},
		{name: "php-fpm8.2", comm: "php-fpm8.2", exe: "php-fpm8.2", uid: uidRoot, cgroup: "/system.slice/php8.2-fpm.service", n: [2]int{1, 1}, mib: 12, spread: 0.2, private: 0.3, busy: 0},
		{name: "php-fpm8.2", comm: "php-fpm8.2", exe: "php-fpm8.2", uid: uidWWW, cgroup: "/system.slice/php8.2-fpm.service", n: [2]int{20, 60}, mib: 28, spread: 0.6, private: 0.7, busy: 0.8, life: 2 * time.Hour, leaky: true},
		{name: "redis-server", comm: "redis-server", exe: "redis-server", uid: uidRedis, cgroup: "/system.slice/redis-server.service", n: [2]int{1, 1}, mib: 300, spread: 1.2, private: 0.98, busy: 0.9, grow: 0.6, growFor: 24 * time.Hour},
	}},
	{"db", []program{
		{name: "postgres", comm: "postgres", exe: "postgres", uid: uidPostgres, cgroup: "/system.slice/system-postgresql.slice/postgresql@15-main.service", n: [2]int{7, 7}, mib: 40, spread: 1.0, private: 0.2, busy: 0.6},
		{name: "postgres", comm: "postgres", exe: "postgres", uid: uidPostgres, cgroup: "/system.slice/system-postgresql.slice/postgresql@15-main.service", n: [2]int{20, 120}, mib: 60, spread: 0.8, private: 0.15, busy: 0.7, life: 30 * time.Minute},
		{name: "pgbouncer", comm: "pgbouncer", exe: "pgbouncer", uid: uidPostgres, cgroup: "/system.slice/pgbouncer.service", n: [2]int{1, 1}, mib: 8, spread: 0.3, private: 0.9, busy: 0.9, leaky: true},
		{name: "pg_basebackup", comm: "pg_basebackup", exe: "pg_basebackup", uid: uidPostgres, cgroup: "/system.slice/cron.service", n: [2]int{0, 1}, mib: 10, spread: 0.3, private: 0.9, life: 20 * time.Minute, busy: 0.9},
	}},
	{"app", []program{
		{name: "java", comm: "java", exe: "java", uid: uidApp, cgroup: "/system.slice/app.service", n: [2]int{1, 3}, mib: 1800, spread: 0.7, private: 0.97, busy: 0.95, grow: 0.8, growFor: 6 * time.Hour, leaky: true},
		{name: "gunicorn: worker [app] [python3.11]", comm: "gunicorn", exe: "python3.11", script: "gunicorn", uid: uidApp, cgroup: "/system.slice/api.service", n: [2]int{8, 32}, mib: 90, spread: 0.4, private: 0.6, busy: 0.8, life: 6 * time.Hour, leaky: true},
		{name: "gunicorn: master [app] [python3.11]", comm: "gunicorn", exe: "python3.11", script: "gunicorn", uid: uidApp, cgroup: "/system.slice/api.service", n: [2]int{1, 1}, mib: 40, spread: 0.2, private: 0.5, busy: 0.05},
		{name: "node", comm: "node", exe: "node", uid: uidApp, cgroup: "/system.slice/frontend.service", n: [2]int{2, 16}, mib: 140, spread: 0.6, private: 0.9, busy: 0.9, leaky: true},
		{name: "celery [python3.11]", comm: "celery", exe: "python3.11", script: "celery", uid: uidApp, cgroup: "/system.slice/worker.service", n: [2]int{4, 24}, mib: 110, spread: 0.5, private: 0.7, busy: 0.9, life: 3 * time.Hour},
	}},
	{"k8s", []program{
		{name: "kubelet", comm: "kubelet", exe: "kubelet", uid: uidRoot, cgroup: "/system.slice/kubelet.service", n: [2]int{1, 1}, mib: 90, spread: 0.3, private: 0.95, busy: 0.95},
		{name: "containerd-shim-runc-v2", comm: "containerd-shim", exe: "containerd-shim-runc-v2", uid: uidRoot, cgroup: "/system.slice/containerd.service", n: [2]int{15, 45}, mib: 7, spread: 0.3, private: 0.6, busy: 0.1, life: 24 * time.Hour},
		{name: "pause", comm: "pause", exe: "pause", uid: uidNobody, cgroup: "/kubepods.slice/kubepods-besteffort.slice", n: [2]int{15, 45}, mib: 0.3, spread: 0.1, private: 0.5, busy: 0, life: 24 * time.Hour},
		{name: "envoy", comm: "envoy", exe: "envoy", uid: uidApp, cgroup: "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podenvoy.slice", n: [2]int{2, 12}, mib: 70, spread: 0.4, private: 0.9, busy: 0.9, life: 12 * time.Hour, limit: 512, leaky: true},
		{name: "coredns", comm: "coredns", exe: "coredns", uid: uidApp, cgroup: "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podcoredns.slice", n: [2]int{0, 2}, mib: 30, spread: 0.2, private: 0.95, busy: 0.5, limit: 170},
		{name: "app-server", comm: "app-server", exe: "app-server", uid: uidApp, cgroup: "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podapp.slice", n: [2]int{4, 30}, mib: 200, spread: 0.8, private: 0.95, busy: 0.9, life: 8 * time.Hour, limit: 1024, leaky: true},
	}},
	{"ci", []program{
		{name: "gitlab-runner", comm: "gitlab-runner", exe: "gitlab-runner", uid: uidRoot, cgroup: "/system.slice/gitlab-runner.service", n: [2]int{1, 1}, mib: 45, spread: 0.2, private: 0.9, busy: 0.5},
		{name: "cc1", comm: "cc1", exe: "cc1", uid: uidApp, cgroup: "/system.slice/gitlab-runner.service", n: [2]int{0, 8}, mib: 150, spread: 0.8, private: 0.9, life: 40 * time.Second, busy: 1},
		{name: "compile", comm: "compile", exe: "compile", uid: uidApp, cgroup: "/system.slice/gitlab-runner.service", n: [2]int{0, 8}, mib: 250, spread: 0.8, private: 0.95, life: 30 * time.Second, busy: 1},
		{name: "make", comm: "make", exe: "make", uid: uidApp, cgroup: "/system.slice/gitlab-runner.service", n: [2]int{0, 2}, mib: 3, spread: 0.3, private: 0.7, life: 10 * time.Minute, busy: 0.2},
		{name: "bash", comm: "bash", exe: "bash", uid: uidApp, cgroup: "/system.slice/gitlab-runner.service", n: [2]int{1, 6}, mib: 2.5, spread: 0.3, private: 0.7, life: 10 * time.Minute, busy: 0.2},
	}},
}
