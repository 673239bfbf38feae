// Command memwho-floor is the lower bound memwho's scan is measured
// against: it lists /proc and reads every /proc/PID/smaps_rollup (or, with
// -status, every /proc/PID/status, the floor for memwho --fast) with bare
// open/read/close into one reused buffer, parsing nothing. Almost all of the
// cost of reading smaps_rollup is the kernel's page-table walk, which no
// reader can avoid, so memwho's time over this floor is its own overhead.
//
//	memwho-floor [-status] [-names | -snapshot | -report] [-held] [-statm] [-parallel N] [-root /proc]
//	memwho-floor -startup
//
// With -names it also reads each process's comm and exe link, the two
// reads a report by program cannot do without: the floor of a default
// report, where plain -status and smaps_rollup are the floors of reading
// figures alone. With -snapshot it reads status, cgroup and the exe link
// instead: what a snapshot file holds for every grouping (the uid and the
// task name from status, the cgroups), the floor of memwho snapshot.
//
// With -report it reads what -names -held reads, takes Pss and SwapPss
// from each smaps_rollup, groups the processes by comm and prints one line
// per comm, largest first: the least a Go program that prints a report
// can cost, in time and above all in peak RSS, which for a Go binary is
// mostly its own mapped image and runtime (docs/performance.md).
//
// With -statm it reads each process's statm first: the size check by
// which memwho reads a large process page by page rather than stall it
// with smaps_rollup's walk, part of what a report must read since.
//
// With -startup it reads one file, /proc/self/stat, and exits: a minimal
// static Go program that reads /proc, the floor of memwho's start-up.
//
// It prints how many files and bytes it read and how many processes were
// gone or unreadable.
package main

import (
	"os"

	"github.com/memwho/memwho/internal/floor"
)

func main() { os.Exit(floor.Main(os.Args[1:])) }
