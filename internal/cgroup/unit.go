package cgroup

import "strings"

// RootSlice is systemd's name of the root cgroup: processes directly in
// it (kernel threads are not counted; early processes of a v1 host can
// be) belong to no other unit.
const RootSlice = "-.slice"

// Unit returns the systemd unit a cgroup path (in the hierarchy systemd
// manages: proc.CgroupPaths) belongs to: the deepest service, scope or
// slice component of the path's leading run of units. The first
// component that is not a unit starts a subtree systemd delegated (a
// container's "payload" or "container", a runtime's own cgroups), and
// what lies below it, units of a container's own systemd included, is
// that unit's: the cron.service of an nspawn container is not the
// host's. A unit of a user's
// systemd instance is prefixed with that instance,
// "user@1000.service/app.slice/foo.service" being
// "user@1000.service/foo.service", so that it never reads as a system
// unit of the same name. A path with no unit component at all (v1
// cgroups systemd does not manage: /docker/ID, /kubepods/...) is returned
// whole, and the root is RootSlice.
func Unit(path string) string {
	var unit, user string
	for rest := path; rest != ""; {
		var c string
		c, rest, _ = strings.Cut(rest, "/")
		if c == "" {
			continue
		}
		if !isUnit(c) {
			break
		}
		if user == "" && strings.HasPrefix(c, "user@") && strings.HasSuffix(c, ".service") {
			user, unit = c, c
			continue
		}
		unit = c
	}
	switch {
	case unit == "" && strings.Trim(path, "/") == "":
		return RootSlice
	case unit == "":
		return path
	case user != "" && unit != user:
		return user + "/" + unit
	}
	return unit
}

// Slice returns the slice a cgroup path's system unit is in: the deepest
// slice component before the first service, scope or non-unit, so that everything
// a user's systemd instance runs rolls up into user-UID.slice and every
// container of a Kubernetes pod into the pod's slice. A path with no
// unit component is returned whole (as Unit does), and one with no slice
// is in RootSlice.
func Slice(path string) string {
	slice := ""
	any := false
	for rest := path; rest != ""; {
		var c string
		c, rest, _ = strings.Cut(rest, "/")
		if c == "" {
			continue
		}
		if !isUnit(c) {
			break
		}
		any = true
		if !strings.HasSuffix(c, ".slice") {
			break
		}
		slice = c
	}
	switch {
	case slice != "":
		return slice
	case !any && strings.Trim(path, "/") != "":
		return path
	}
	return RootSlice
}

// isUnit reports whether a path component names a unit of the kinds
// systemd puts processes in.
func isUnit(c string) bool {
	for _, s := range [...]string{".service", ".scope", ".slice"} {
		if len(c) > len(s) && strings.HasSuffix(c, s) {
			return true
		}
	}
	return false
}
