// SPDX-License-Identifier: Apache-2.0

// Package profile records where the machine's CPUs spend a bench trial
// (perf record of every CPU, with call stacks) and draws it as a flame
// graph, as the DPVS report publishes one per worker count.
package profile

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Frequency is the sampling rate per CPU (Hz): prime, so that it beats
// with no periodic work of the kernel's.
const Frequency = 997

// Profile is one recorded trial: its call stacks folded as Brendan
// Gregg's stackcollapse does ("CPU n;comm;outer;...;inner" -> samples).
type Profile struct {
	DUT     string         `json:"dut"`
	Trial   string         `json:"trial"` // what ran while perf recorded
	Samples int            `json:"samples"`
	Stacks  map[string]int `json:"-"` // written to flame-DUT.folded
}

// Recording is perf record running over every CPU.
type Recording struct {
	cmd  *exec.Cmd
	data string
	done chan error
	log  strings.Builder
}

// Start starts perf record -a -g into a file of dir.
func Start(dir string) (*Recording, error) {
	if _, err := exec.LookPath("perf"); err != nil {
		return nil, fmt.Errorf("profile: perf not found (Debian: linux-perf): %w", err)
	}
	f, err := os.CreateTemp(dir, "perf-*.data")
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	f.Close()
	r := &Recording{data: f.Name(), done: make(chan error, 1)}
	r.cmd = exec.Command("perf", "record", "-a", "-g", "-F", fmt.Sprint(Frequency), "-o", r.data)
	r.cmd.Stdout, r.cmd.Stderr = &r.log, &r.log
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := r.cmd.Start(); err != nil {
		os.Remove(r.data)
		return nil, fmt.Errorf("profile: start perf record: %w", err)
	}
	go func() { r.done <- r.cmd.Wait() }()
	// perf is recording once it has opened its events: give it the time
	// it takes here (tens of ms) before the trial starts
	select {
	case err := <-r.done:
		os.Remove(r.data)
		return nil, fmt.Errorf("profile: perf record exited at once: %v: %s", err, strings.TrimSpace(r.log.String()))
	case <-time.After(300 * time.Millisecond):
	}
	return r, nil
}

// Stop ends the recording (SIGINT, as ^C) and folds its stacks. The
// data file is removed.
func (r *Recording) Stop(ctx context.Context) (map[string]int, int, error) {
	defer os.Remove(r.data)
	_ = r.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-r.done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			return nil, 0, fmt.Errorf("profile: perf record: %w", err)
		}
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-r.done
		return nil, 0, fmt.Errorf("profile: perf record did not stop in 30 s: %s", strings.TrimSpace(r.log.String()))
	}
	cmd := exec.CommandContext(ctx, "perf", "script", "-i", r.data, "-F", "comm,cpu,ip,sym")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, 0, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("profile: perf script: %w", err)
	}
	stacks, n, ferr := Fold(out)
	if err := cmd.Wait(); err != nil {
		return nil, 0, fmt.Errorf("profile: perf script: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return stacks, n, ferr
}

// Fold reads `perf script -F comm,cpu,ip,sym` output (a line with the
// command and CPU, then one line per frame, innermost first, then a
// blank line) into folded stacks, the CPU and command outermost. It returns the samples
// read.
func Fold(rd io.Reader) (map[string]int, int, error) {
	stacks := map[string]int{}
	n := 0
	var comm string
	var frames []string
	flush := func() {
		if comm == "" {
			return
		}
		path := []string{comm}
		for i := len(frames) - 1; i >= 0; i-- {
			path = append(path, frames[i])
		}
		stacks[strings.Join(path, ";")]++
		n++
		comm, frames = "", frames[:0]
	}
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			flush()
		case line[0] == ' ' || line[0] == '\t':
			frames = append(frames, frameName(strings.TrimSpace(line)))
		default:
			flush()
			comm = sampleRoot(line)
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return nil, 0, fmt.Errorf("profile: read perf script: %w", err)
	}
	return stacks, n, nil
}

// sampleRoot is the outermost frames of a sample from its header line,
// "COMM [CPU]": "CPU n;COMM", so that the graph shows which CPU ran
// what.
func sampleRoot(line string) string {
	line = strings.ReplaceAll(strings.TrimSpace(line), ";", ":")
	i := strings.LastIndex(line, " [")
	if i < 0 || !strings.HasSuffix(line, "]") {
		return line
	}
	cpu, err := strconv.Atoi(line[i+2 : len(line)-1])
	if err != nil {
		return line
	}
	return fmt.Sprintf("CPU %d;%s", cpu, line[:i])
}

// frameName is a frame's symbol from "ADDR SYMBOL+0xOFF": the symbol
// without its offset, or [unknown].
func frameName(line string) string {
	_, sym, ok := strings.Cut(line, " ")
	if !ok || sym == "" {
		return "[unknown]"
	}
	if i := strings.LastIndex(sym, "+0x"); i > 0 {
		sym = sym[:i]
	}
	return strings.ReplaceAll(sym, ";", ":")
}

// WriteFiles writes p as dir/flame-NAME.svg and dir/flame-NAME.folded
// (the folded stacks, for FlameGraph's own tools), NAME from the DUT;
// it returns the SVG's file name.
func (p Profile) WriteFiles(dir string) (string, error) {
	name := "flame-" + strings.NewReplacer(" ", "-", "/", "-").Replace(p.DUT)
	var b strings.Builder
	keys := make([]string, 0, len(p.Stacks))
	for k := range p.Stacks {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %d\n", k, p.Stacks[k])
	}
	if err := os.WriteFile(filepath.Join(dir, name+".folded"), []byte(b.String()), 0o644); err != nil {
		return "", err
	}
	title := fmt.Sprintf("%s: %s (%d samples at %d Hz on every CPU)", p.DUT, p.Trial, p.Samples, Frequency)
	svg := FlameGraph(title, p.Stacks)
	return name + ".svg", os.WriteFile(filepath.Join(dir, name+".svg"), []byte(svg), 0o644)
}
