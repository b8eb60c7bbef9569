package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// WriteMarkdown writes the report: how it was made, the servers' table,
// the ratios, the Helm comparisons and the memory.
func (rep *Report) WriteMarkdown(w io.Writer) error {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "Measured %s with `%s` (%s), on %s.\n\n", rep.Date.Format("2006-01-02 15:04 UTC"), strings.TrimSpace(rep.Command), rep.Took.Round(time.Second), rep.Machine)
	for _, r := range rep.Repos {
		fmt.Fprintf(&buf, "- %s: %d files, %s of content, tar.gz %s\n", r.Name, r.Files, size(r.Content), size(r.Tgz))
	}
	fmt.Fprintf(&buf, "\n| repository | server | work dir | p50, 1 client | p99, 1 client | req/s, %d clients | p50, %d clients |\n", Clients, Clients)
	buf.WriteString("|---|---|---|---:|---:|---:|---:|\n")
	for _, r := range rep.Repos {
		for _, row := range r.Rows {
			fmt.Fprintf(&buf, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Name, serverName(row.Server), orDash(row.FS),
				ms(row.One.Quantile(0.5)), ms(row.One.Quantile(0.99)), perSecond(row.Many), ms(row.Many.Quantile(0.5)))
		}
	}

	buf.WriteString("\nRatios (strata's time over the other's: below 1 is faster; throughput: above 1 is more):\n\n")
	buf.WriteString("| repository | work dir | p50 vs Argo CD | req/s vs Argo CD | p50 vs floor | p50 vs floor + command | req/s vs floor + command |\n|---|---|---:|---:|---:|---:|---:|\n")
	for _, r := range rep.Repos {
		floor, fc := r.find("floor", ""), r.find("floorcmd", "")
		for _, row := range []struct{ server, fs string }{{"strata", "disk"}, {"strata", "tmpfs"}, {"strata-ns", "disk"}} {
			s, a := r.find(row.server, row.fs), r.find("argo", row.fs)
			if s == nil || a == nil || floor == nil || fc == nil {
				continue
			}
			label := row.fs
			if row.server == "strata-ns" {
				label += ", --command-namespaces"
			}
			fmt.Fprintf(&buf, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Name, label,
				ratio(s.One.Quantile(0.5), a.One.Quantile(0.5)),
				fmt.Sprintf("%.2f×", s.Many.PerSecond()/a.Many.PerSecond()),
				ratio(s.One.Quantile(0.5), floor.One.Quantile(0.5)),
				ratio(s.One.Quantile(0.5), fc.One.Quantile(0.5)),
				fmt.Sprintf("%.2f×", s.Many.PerSecond()/fc.Many.PerSecond()))
		}
	}
	buf.WriteString("\nWhat half Argo CD's p50 and twice its throughput (on disk) ask, beside the floor + command, which does nothing but what any command plugin server must (drain, hash, start the command once):\n\n")
	buf.WriteString("| repository | 0.5 × Argo CD's p50 | floor + command p50 | 2 × Argo CD's req/s | floor + command req/s |\n|---|---:|---:|---:|---:|\n")
	for _, r := range rep.Repos {
		a, fc := r.find("argo", "disk"), r.find("floorcmd", "")
		if a == nil || fc == nil {
			continue
		}
		fmt.Fprintf(&buf, "| %s | %s | %s | %s | %s |\n", r.Name, ms(a.One.Quantile(0.5)/2), ms(fc.One.Quantile(0.5)),
			rate(2*a.Many.PerSecond()), perSecond(fc.Many))
	}

	if len(rep.Helm) > 0 {
		fmt.Fprintf(&buf, "\nThe built-in Helm plugin through `strata cmp serve --builtin helm` (work dir on disk), beside what users run otherwise:\n\n")
		fmt.Fprintf(&buf, "| request | peer | peer p50 | strata p50 | strata faster, p50 | peer req/s, %d | strata req/s, %d | strata more, req/s |\n", Clients, Clients)
		buf.WriteString("|---|---|---:|---:|---:|---:|---:|---:|\n")
		for _, h := range rep.Helm {
			fmt.Fprintf(&buf, "| %s | %s | %s | %s | %.2f× | %s | %s | %.2f× |\n", h.Request, h.Peer,
				ms(h.PeerTimes[0].Quantile(0.5)), ms(h.Strata[0].Quantile(0.5)),
				h.PeerTimes[0].Quantile(0.5).Seconds()/h.Strata[0].Quantile(0.5).Seconds(),
				perSecond(h.PeerTimes[1]), perSecond(h.Strata[1]), h.Strata[1].PerSecond()/h.PeerTimes[1].PerSecond())
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(&buf, "\n%s\n", n)
	}
	if len(rep.Memory) > 0 {
		fmt.Fprintf(&buf, "\nPeak resident set of each server process during the %d-client row on the monorepo (plugin commands not included):\n\n", Clients)
		buf.WriteString("| server | work dir | peak RSS |\n|---|---|---:|\n")
		for _, m := range rep.Memory {
			fmt.Fprintf(&buf, "| %s | %s | %s |\n", serverName(m.Server), orDash(m.FS), size(m.PeakRSS))
		}
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func (r RepoResult) find(server, fs string) *ServerResult {
	for i := range r.Rows {
		if r.Rows[i].Server == server && r.Rows[i].FS == fs {
			return &r.Rows[i]
		}
	}
	return nil
}

func serverName(kind string) string {
	switch kind {
	case "argo":
		return "Argo CD's sidecar"
	case "strata":
		return "strata"
	case "strata-ns":
		return "strata, `--command-namespaces`"
	case "floorcmd":
		return "floor + command (drain, hash, start `cat` once)"
	}
	return "floor (drain and hash)"
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// ratio formats a/b, saying which way it goes.
func ratio(a, b time.Duration) string {
	if a <= 0 || b <= 0 {
		return "–"
	}
	r := a.Seconds() / b.Seconds()
	if r < 1 {
		return fmt.Sprintf("%.2f× (%.1f× faster)", r, 1/r)
	}
	return fmt.Sprintf("%.2f×", r)
}

// perSecond formats s's requests per second with about three significant
// digits.
func perSecond(s Sample) string { return rate(s.PerSecond()) }

// rate formats requests per second.
func rate(v float64) string {
	switch {
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// size formats n bytes in KiB, MiB or GiB.
func size(n int64) string {
	switch {
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
}

// machine describes the CPU, the kernel and the work directories' file
// systems.
func machine(disk, tmpfs string) string {
	cpu := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
		f.Close()
	}
	var u syscall.Utsname
	kernel := runtime.GOOS
	if syscall.Uname(&u) == nil {
		kernel = "Linux " + utsString(u.Release[:])
	}
	s := fmt.Sprintf("%d CPUs (%s), %s; work dirs on %s (%s)", runtime.NumCPU(), cpu, kernel, fsType(disk), disk)
	if tmpfs != "" {
		s += fmt.Sprintf(" and %s (%s)", fsType(tmpfs), tmpfs)
	}
	return s
}

func utsString(b []int8) string {
	var s []byte
	for _, c := range b {
		if c == 0 {
			break
		}
		s = append(s, byte(c))
	}
	return string(s)
}

// fsType names the file system dir is on.
func fsType(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "an unknown file system"
	}
	switch st.Type {
	case 0xEF53:
		return "ext4"
	case 0x58465342:
		return "xfs"
	case 0x9123683E:
		return "btrfs"
	case 0x01021994:
		return "tmpfs"
	case 0x794c7630:
		return "overlayfs"
	}
	return fmt.Sprintf("file system 0x%x", st.Type)
}
