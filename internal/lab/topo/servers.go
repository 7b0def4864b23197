// SPDX-License-Identifier: Apache-2.0

package topo

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ServeCommand is the command line of one real's server: name is what it
// answers with, listen the address it serves on.
type ServeCommand func(name, listen string) []string

// XLBServe runs each real's server as `xlb lab serve` of binary self.
func XLBServe(self string) ServeCommand {
	return func(name, listen string) []string {
		return []string{self, "lab", "serve", "--name", name, "--listen", listen}
	}
}

// Servers are the reals' server processes.
type Servers []*exec.Cmd

// StartServers starts a server (HTTP and UDP echo on ServicePort) in every
// real. With detach, the servers are put in sessions of their own and
// outlive the caller (`xlb lab up`); Down stops them. Their output goes
// to serverLog in the lab's directory.
func (t Topology) StartServers(serve ServeCommand, detach bool) (Servers, error) {
	log, err := t.openServerLog()
	if err != nil {
		return nil, err
	}
	defer log.Close()
	var srvs Servers
	for i := 1; i <= t.Reals; i++ {
		args := serve(fmt.Sprintf("real%d", i), fmt.Sprintf(":%d", ServicePort))
		cmd := t.Exec(t.Real(i), args[0], args[1:]...)
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: detach}
		if err := cmd.Start(); err != nil {
			srvs.Stop()
			return nil, fmt.Errorf("start server in real%d: %w", i, err)
		}
		srvs = append(srvs, cmd)
	}
	if detach {
		for _, cmd := range srvs {
			_ = cmd.Process.Release()
		}
		return nil, nil
	}
	return srvs, nil
}

// Stop kills the servers and waits for them.
func (s Servers) Stop() {
	for _, cmd := range s {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}

const (
	serverLog    = "servers.log"
	topologyFile = "topology.json"
)

// save records the topology in the lab's directory, so commands that
// name the lab later (down, exec) find its net and size.
func (t Topology) save() error {
	if err := os.MkdirAll(t.Dir(), 0o700); err != nil {
		return fmt.Errorf("lab directory: %w", err)
	}
	b, _ := json.Marshal(t)
	return os.WriteFile(filepath.Join(t.Dir(), topologyFile), b, 0o600)
}

// Saved returns the topology of the lab named name that is up, as Up
// recorded it; ok is false when there is no record.
func Saved(name string) (t Topology, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(Topology{Name: name}.Dir(), topologyFile))
	if errors.Is(err, os.ErrNotExist) {
		return Topology{}, false, nil
	}
	if err == nil {
		err = json.Unmarshal(b, &t)
	}
	if err != nil || t.Name != name {
		return Topology{}, false, fmt.Errorf("lab %s record: corrupt (%v)", name, err)
	}
	return t, true, nil
}

func (t Topology) openServerLog() (*os.File, error) {
	dir := t.Dir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("lab directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, serverLog), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("server log: %w", err)
	}
	return f, nil
}

// Node returns the namespace of a lab node named as `xlb lab exec` takes
// it: client, lb or realN.
func (t Topology) Node(node string) (string, error) {
	switch node {
	case "client":
		return t.Client(), nil
	case "lb":
		return t.LB(), nil
	}
	if n, ok := strings.CutPrefix(node, "real"); ok {
		if i, err := strconv.Atoi(n); err == nil && i >= 1 && i <= t.Reals && n == strconv.Itoa(i) {
			return t.Real(i), nil
		}
	}
	return "", fmt.Errorf("node %q: want client, lb or real1..real%d", node, t.Reals)
}
