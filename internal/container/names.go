package container

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/memwho/memwho/internal/privilege"
	"github.com/memwho/memwho/internal/proc"
)

// userRights is privilege.UserRights (tests replace it).
var userRights = privilege.UserRights

// MaxStateFile is the largest runtime state file Names reads, in bytes
// (1 MiB): a docker config.v2.json is a few kB, podman's containers.json
// about 1 kB per container.
const MaxStateFile = 1 << 20

// maxDirEntries caps the entries read from one log directory.
const maxDirEntries = 1 << 16

// Names resolves containers to the names their runtimes gave them, from
// the state the runtimes keep on disk under a root directory (normally
// "/"):
//
//   - docker: var/lib/docker/containers/ID/config.v2.json ("Name"), or
//     ~/.local/share/docker/... of the owner for rootless docker;
//   - podman: var/lib/containers/storage/DRIVER-containers/containers.json
//     ("names"), or ~/.local/share/containers/storage/... of the owner;
//   - Kubernetes (containerd, CRI-O, docker): the kubelet's log links
//     var/log/containers/POD_NAMESPACE_CONTAINER-ID.log give
//     "NAMESPACE/POD/CONTAINER", and var/log/pods/NAMESPACE_POD_UID the
//     pod of a container without a log ("NAMESPACE/POD/ID");
//   - systemd-nspawn, machines and LXC: the name in the cgroup path.
//
// Every file is opened with the user's own rights (never while a
// capability is effective: privilege.UserRights), beneath its runtime's
// directory without following a symbolic link, without blocking, only if
// it is a regular file, and read only up to MaxStateFile; a name is
// whatever bytes the file holds (renderers escape them). Anything that
// fails leaves the short id. Answers are cached for MaxAge, so that the
// long-running views (watch, serve, record) see containers started since
// and a report reads each file once.
//
// A rootless container's name comes from its owner's home only, never
// from the system's state, and carries the owner ("NAME (uid 1000)"): a
// user can create cgroups named like any container inside their own
// systemd instance, and name their containers anything.
//
// Names that others read (the agent's socket and metrics) come only from
// state those others could read themselves: see Public.
type Names struct {
	root string // "" resolves nothing
	// Public, when set, takes a name only from a state file owned by
	// root (the system runtimes' state, the admin's) or readable by
	// every user (the file, and every directory above it searchable by
	// all), and lists a directory only when it is root's or open to
	// all likewise; anything else leaves the short id. The agent sets
	// it: run as root it read another user's 0700 rootless podman
	// storage and published the names to its socket's group, who could
	// not read them (issue 27).
	Public bool
	// MaxAge is how long answers are kept (NewNames: one minute).
	MaxAge time.Duration
	// now returns the time (time.Now; tests set it).
	now    func() time.Time
	loaded time.Time // when the caches were last cleared

	refs map[Ref]string
	keys map[string]string // cgroup path -> key

	homes    map[int]string // uid -> home, from etc/passwd
	homesOK  bool
	podman   map[string]map[string]string // storage dir -> id -> name
	kubeLogs map[string]string            // id -> "ns/pod/container"
	kubeOK   bool
	pods     map[string]string // pod uid -> "ns/pod"
	podsOK   bool
	buf      []byte
}

// NewNames returns a resolver reading runtime state under root; "" makes
// one that resolves nothing (short ids and path names only).
func NewNames(root string) *Names {
	return &Names{root: root, MaxAge: time.Minute, now: time.Now}
}

// expire empties every cache once MaxAge has passed since the last time.
func (n *Names) expire() {
	if n.now == nil {
		return
	}
	now := n.now()
	if now.Sub(n.loaded) < n.MaxAge && !now.Before(n.loaded) {
		return
	}
	n.loaded = now
	clear(n.refs)
	clear(n.keys)
	n.homes, n.homesOK = nil, false
	n.podman = nil
	n.kubeLogs, n.kubeOK = nil, false
	n.pods, n.podsOK = nil, false
}

// RootFor returns the directory runtime state is read under for a procfs
// tree: "/" for the kernel's /proc, the parent for any other directory
// named "proc" (a host's root mounted elsewhere, /host/proc, or a fake
// tree in tests), and "" for anything else.
func RootFor(procDir string) string {
	d := filepath.Clean(procDir)
	if d == proc.DefaultRoot {
		return "/"
	}
	if filepath.Base(d) == "proc" {
		return filepath.Dir(d)
	}
	return ""
}

// Key returns the key of a cgroup path under --by container: Host for no
// container, else the container's name, else its short id.
func (n *Names) Key(path string) string {
	n.expire()
	if k, ok := n.keys[path]; ok {
		return k
	}
	ref, ok := Parse(path)
	k := Host
	if ok {
		k = n.Name(ref)
	}
	if n.keys == nil {
		n.keys = make(map[string]string)
	}
	if len(n.keys) > 1<<16 {
		clear(n.keys)
	}
	n.keys[path] = k
	return k
}

// Name returns the container's name, or ref.Short().
func (n *Names) Name(ref Ref) string {
	if ref.Runtime == None {
		return Host
	}
	if k, ok := n.refs[ref]; ok {
		return k
	}
	k := n.resolve(ref)
	if k == "" {
		k = ref.Short()
	}
	if ref.Rootless() {
		k += " (uid " + strconv.Itoa(ref.Owner) + ")"
	}
	if n.refs == nil {
		n.refs = make(map[Ref]string)
	}
	n.refs[ref] = k
	return k
}

func (n *Names) resolve(ref Ref) string {
	switch ref.Runtime {
	case Nspawn, Machine, LXC:
		return ""
	}
	if n.root == "" || userRights() != nil {
		return ""
	}
	if ref.PodUID != "" && !ref.Rootless() {
		if k := n.kube(ref); k != "" {
			return k
		}
	}
	// home is "" for the system's state. A rootless runtime's state is
	// read beneath its owner's home, every component under it
	// (.local/share/...) without following a symlink: the owner could
	// point it at another user's state, or the system's, which a reader
	// with more rights (root) would then show as theirs. The system's
	// directories (var/lib/docker may be root's symlink) are opened as
	// they are.
	home := ""
	if ref.Rootless() {
		if home = n.home(ref.Owner); home == "" {
			return ""
		}
	}
	switch ref.Runtime {
	case Docker:
		return n.docker(home, ref)
	case Podman:
		return n.podmanName(home, ref)
	case Unknown:
		if k := n.docker(home, ref); k != "" {
			return k
		}
		return n.podmanName(home, ref)
	}
	return ""
}

// docker reads the container's config.v2.json, from the system's state
// or (home set) from the rootless owner's.
func (n *Names) docker(home string, ref Ref) string {
	dir, rel := filepath.Join(n.root, "var/lib/docker/containers"), ""
	if home != "" {
		dir, rel = home, ".local/share/docker/containers/"
	}
	b := n.read(dir, rel+ref.ID+"/config.v2.json")
	if b == nil {
		return ""
	}
	var c struct{ Name string }
	if json.Unmarshal(b, &c) != nil {
		return ""
	}
	return strings.TrimPrefix(c.Name, "/")
}

// storageDrivers are the podman (containers/storage) drivers whose
// DRIVER-containers/containers.json is looked for, most common first.
var storageDrivers = [...]string{"overlay", "vfs", "btrfs", "zfs"}

// podmanName finds the container in containers.json, of the system or
// (home set) of the rootless owner.
func (n *Names) podmanName(home string, ref Ref) string {
	dir, rel := filepath.Join(n.root, "var/lib/containers/storage"), ""
	if home != "" {
		dir, rel = home, ".local/share/containers/storage/"
	}
	if n.podman == nil {
		n.podman = make(map[string]map[string]string)
	}
	m, ok := n.podman[dir]
	if !ok {
		m = make(map[string]string)
		for _, d := range storageDrivers {
			b := n.read(dir, rel+d+"-containers/containers.json")
			if b == nil {
				continue
			}
			var list []struct {
				ID    string   `json:"id"`
				Names []string `json:"names"`
			}
			if json.Unmarshal(b, &list) != nil {
				continue
			}
			for _, c := range list {
				if len(c.Names) > 0 && c.Names[0] != "" {
					m[c.ID] = c.Names[0]
				}
			}
		}
		n.podman[dir] = m
	}
	return m[ref.ID]
}

// kube names a container of a Kubernetes pod from the kubelet's logs.
func (n *Names) kube(ref Ref) string {
	if !n.kubeOK {
		n.kubeOK = true
		n.kubeLogs = make(map[string]string)
		for _, e := range n.list(filepath.Join(n.root, "var/log/containers")) {
			// POD_NAMESPACE_CONTAINER-ID.log: none of the three names
			// may hold "_" (they are DNS labels), the id is 64 hex.
			s, ok := strings.CutSuffix(e, ".log")
			if !ok || len(s) < 66 || s[len(s)-65] != '-' || !isID(s[len(s)-64:]) {
				continue
			}
			f := strings.Split(s[:len(s)-65], "_")
			if len(f) != 3 || f[0] == "" || f[1] == "" || f[2] == "" {
				continue
			}
			n.kubeLogs[s[len(s)-64:]] = f[1] + "/" + f[0] + "/" + f[2]
		}
	}
	if k := n.kubeLogs[ref.ID]; k != "" {
		return k
	}
	if !n.podsOK {
		n.podsOK = true
		n.pods = make(map[string]string)
		for _, e := range n.list(filepath.Join(n.root, "var/log/pods")) {
			// NAMESPACE_POD_UID.
			f := strings.Split(e, "_")
			if len(f) == 3 && f[0] != "" && f[1] != "" && f[2] != "" {
				n.pods[f[2]] = f[0] + "/" + f[1]
			}
		}
	}
	if p := n.pods[ref.PodUID]; p != "" {
		return p + "/" + ref.Short()
	}
	return ""
}

// home returns uid's home directory from root's etc/passwd.
func (n *Names) home(uid int) string {
	if !n.homesOK {
		n.homesOK = true
		n.homes = make(map[int]string)
		b := n.read(filepath.Join(n.root, "etc"), "passwd")
		for len(b) > 0 {
			var line []byte
			line, b, _ = bytes.Cut(b, []byte("\n"))
			f := strings.Split(string(line), ":")
			if len(f) < 7 {
				continue
			}
			id, err := strconv.Atoi(f[2])
			if err != nil || !filepath.IsAbs(f[5]) {
				continue
			}
			if _, dup := n.homes[id]; !dup {
				// Cleaned as an absolute path first: "/.." is "/",
				// so a home never leaves the root.
				n.homes[id] = filepath.Join(n.root, filepath.Clean(f[5]))
			}
		}
	}
	return n.homes[uid]
}

// read reads name beneath dir under proc's rules for untrusted trees (no
// symbolic link beneath dir, no blocking open, regular files only) and up
// to MaxStateFile bytes; nil when anything fails. The result is valid
// until the next read.
func (n *Names) read(dir, name string) []byte {
	if userRights() != nil {
		return nil
	}
	fs, err := proc.Open(dir)
	if err != nil {
		return nil
	}
	defer fs.Close()
	b, err := fs.ReadFile(name, n.buf, MaxStateFile)
	n.buf = b[:0]
	if err != nil {
		return nil
	}
	if n.Public && !public(filepath.Join(dir, name), false) {
		// Checked after the read, on the path it took beneath dir
		// (no symlink there): the file it read is this one, unless
		// its owner moves it meanwhile, which only they could, and
		// it is theirs to publish.
		return nil
	}
	return b
}

// public reports whether path (a regular file, or with dir a directory
// to list) is root's, or readable by every user: it grants read (and,
// a directory, search) to others, and every directory above it grants
// search to others.
func public(path string, dir bool) bool {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	st, err := os.Stat(abs)
	if err != nil {
		return false
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid == 0 {
		return true
	}
	want := os.FileMode(0o004)
	if dir {
		want |= 0o001
	}
	if st.Mode().Perm()&want != want {
		return false
	}
	for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil || st.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

// list returns the names in dir (at most maxDirEntries); only names are
// used, nothing is opened through them.
func (n *Names) list(dir string) []string {
	if userRights() != nil {
		return nil
	}
	if n.Public && !public(dir, true) {
		return nil
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer f.Close()
	names, _ := f.Readdirnames(maxDirEntries)
	return names
}
