package sample

// By names a grouping of processes.
type By uint8

const (
	// ByProgram groups by program name (see ProgramName).
	ByProgram By = iota
	// ByPID gives every process its own group.
	ByPID
	// ByUser groups by real user.
	ByUser
	// ByCgroup groups by cgroup path.
	ByCgroup
)
