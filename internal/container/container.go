// Package container finds the container a process runs in from its cgroup
// path, and the name its runtime gave that container.
//
// Parse is a pure function of the path: it knows the layouts docker,
// podman (root and rootless), containerd and CRI-O under Kubernetes,
// systemd-nspawn and other systemd machines, and LXC/LXD leave in the
// cgroup tree, for cgroup v2 and v1. Names (names.go) then reads the
// state each runtime keeps on disk, after the scan and with the user's
// own rights, without talking to any daemon; what it cannot read leaves
// the short id.
package container

import (
	"strconv"
	"strings"
)

// Runtime says which layout a container's cgroup was recognised by.
type Runtime uint8

// Runtimes.
const (
	// None: the process is in no container (the host).
	None Runtime = iota
	// Unknown: a bare 64-hex cgroup, as docker's and the kubelet's
	// cgroupfs drivers make (/docker/ID, /kubepods/.../podUID/ID).
	Unknown
	Docker
	Podman
	Containerd
	CRIO
	// Nspawn is systemd-nspawn@NAME.service; the id is the name.
	Nspawn
	// Machine is a machine-NAME.scope that systemd-machined registered
	// (systemd-nspawn --register, libvirt); the id is the name.
	Machine
	// LXC is lxc.payload.NAME (v2, LXC 4 and LXD) or /lxc/NAME (v1); the id
	// is the name.
	LXC
)

var runtimeNames = [...]string{"host", "unknown", "docker", "podman", "containerd", "cri-o", "systemd-nspawn", "machine", "lxc"}

// String returns the runtime's name.
func (r Runtime) String() string {
	if int(r) < len(runtimeNames) {
		return runtimeNames[r]
	}
	return "?"
}

// Host is the key of processes in no container.
const Host = "host"

// Ref is a container as its cgroup path shows it.
type Ref struct {
	Runtime Runtime
	// ID is the container's 64-hex id, or its name for Nspawn, Machine
	// and LXC (as systemd escapes it in unit names, "\x2d" for "-").
	ID string
	// PodUID is the Kubernetes pod's uid (with dashes) when the
	// container is in a kubepods cgroup.
	PodUID string
	// Owner is the uid of the user whose systemd instance runs the
	// container (user@UID.service: rootless podman or docker), or -1.
	Owner int
}

// Rootless reports whether a user's own runtime runs the container.
func (r Ref) Rootless() bool { return r.Owner >= 0 }

// Short is the key a container has when its name is unknown: the id's
// first 12 hex digits, as docker and podman print them, or the name for
// runtimes whose id is one.
func (r Ref) Short() string {
	switch r.Runtime {
	case None:
		return Host
	case Nspawn, Machine, LXC:
		return unescapeUnit(r.ID)
	}
	return r.ID[:12]
}

// Parse finds the container of a cgroup path. The outermost container
// component wins: a container started inside another (docker in docker,
// a nested scope podman makes) belongs to the one the host's runtime
// knows. ok is false for processes in no container.
func Parse(path string) (ref Ref, ok bool) {
	ref.Owner = -1
	kube := false
	parent := ""
	for rest := path; rest != ""; {
		var c string
		c, rest, _ = strings.Cut(rest, "/")
		if c == "" {
			continue
		}
		switch {
		case strings.HasPrefix(c, "user@") && strings.HasSuffix(c, ".service"):
			if n, err := strconv.Atoi(c[len("user@") : len(c)-len(".service")]); err == nil && n >= 0 {
				ref.Owner = n
			}
		case strings.HasPrefix(c, "kubepods") || strings.HasPrefix(c, "kubelet-kubepods"):
			// kubepods.slice/kubepods-QOS.slice/kubepods-QOS-podUID.slice
			// (kind nests them in kubelet.slice as kubelet-kubepods-...),
			// and containerd's "kubepods-...-podUID.slice:cri-containerd:ID".
			kube = true
			slice, _, _ := strings.Cut(c, ":")
			if uid, ok := podSlice(slice); ok {
				ref.PodUID = uid
			}
		case kube && strings.HasPrefix(c, "pod") && len(c) > 3 && !strings.HasSuffix(c, ".slice"):
			// v1 cgroupfs: /kubepods/burstable/podUID/ID.
			ref.PodUID = c[3:]
		}
		if r, id, ok := component(c, parent); ok {
			ref.Runtime, ref.ID = r, id
			return ref, true
		}
		parent = c
	}
	return Ref{Owner: -1}, false
}

// component recognises one path component as a container. parent is the
// component before it ("" at the top).
func component(c, parent string) (Runtime, string, bool) {
	if isID(c) {
		if parent == "libpod_parent" {
			// A podman pod under the cgroupfs manager: its containers
			// are the libpod-ID directories inside.
			return None, "", false
		}
		if parent == "docker" {
			return Docker, c, true
		}
		if parent == "lxc" {
			// /lxc/NAME where NAME happens to be 64 hex.
			return LXC, c, true
		}
		return Unknown, c, true
	}
	if parent == "lxc" || parent == "lxc.payload" {
		// v1 (and LXC before 4.0): /lxc/NAME; LXC 3: /lxc.payload/NAME.
		return LXC, c, true
	}
	if id, ok := strings.CutPrefix(c, "lxc.payload."); ok && id != "" {
		return LXC, id, true
	}
	if id, ok := strings.CutPrefix(c, "systemd-nspawn@"); ok {
		if id, ok := strings.CutSuffix(id, ".service"); ok && id != "" {
			return Nspawn, id, true
		}
	}
	if id, ok := strings.CutPrefix(c, "machine-"); ok {
		// machine-libpod_pod_ID.slice is a podman pod, not a machine;
		// only scopes are machines.
		if id, ok := strings.CutSuffix(id, ".scope"); ok && id != "" {
			return Machine, id, true
		}
	}
	// containerd without systemd cgroups under a systemd kubelet:
	// "kubepods-besteffort-podUID.slice:cri-containerd:ID".
	if _, id, ok := strings.Cut(c, ":cri-containerd:"); ok && isID(id) {
		return Containerd, id, true
	}
	for _, l := range layouts {
		id, ok := strings.CutPrefix(c, l.prefix)
		if !ok {
			continue
		}
		id = strings.TrimSuffix(id, ".scope")
		if isID(id) {
			return l.rt, id, true
		}
	}
	return None, "", false
}

// layouts are the "PREFIX-ID[.scope]" components of runtimes that name
// their cgroups by id (systemd driver: .scope; cgroupfs: bare). The
// conmon monitors podman and CRI-O run beside a container
// (libpod-conmon-ID.scope, crio-conmon-ID.scope) are not in it: their
// ids do not parse after the prefix, so they count as the host.
var layouts = [...]struct {
	prefix string
	rt     Runtime
}{
	{"docker-", Docker},
	{"libpod-payload-", Podman},
	{"libpod-", Podman},
	{"cri-containerd-", Containerd},
	{"nerdctl-", Containerd},
	{"crio-", CRIO},
}

// podSlice returns the pod uid of a systemd kubepods slice,
// "kubepods-burstable-pod0a1b_2c3d.slice" (systemd escapes the uid's
// dashes as underscores).
func podSlice(c string) (string, bool) {
	s, ok := strings.CutSuffix(c, ".slice")
	if !ok {
		return "", false
	}
	i := strings.LastIndex(s, "-pod")
	if i < 0 {
		return "", false
	}
	uid := s[i+len("-pod"):]
	if uid == "" {
		return "", false
	}
	return strings.ReplaceAll(uid, "_", "-"), true
}

// isID reports whether s is a 64-digit lower-case hex id.
func isID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// unescapeUnit undoes systemd's unit-name escaping ("\x2d" for "-",
// "\x2f"...): machine names appear escaped in cgroup paths. Escapes that
// decode to a control byte, or that do not parse, stay as written; the
// renderers escape what remains.
func unescapeUnit(s string) string {
	if !strings.Contains(s, `\x`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] == 'x' {
			if n, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil && n >= 0x20 && n < 0x7f {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
