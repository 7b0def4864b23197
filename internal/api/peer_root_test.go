// SPDX-License-Identifier: Apache-2.0

package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/testenv"
)

// peerHelperEnv makes TestPeerHelperProcess a client: "SOCKET METHOD".
const peerHelperEnv = "XLB_TEST_PEER_HELPER"

// TestPeerHelperProcess is the client TestGuardSocket starts as another
// user: it sends one request and prints the status, or the error.
func TestPeerHelperProcess(t *testing.T) {
	arg := os.Getenv(peerHelperEnv)
	if arg == "" {
		return // not a helper: nothing to test
	}
	sock, method, _ := strings.Cut(arg, " ")
	hc := http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	req, err := http.NewRequest(method, "http://xlb/v1/services", nil)
	if err == nil {
		var resp *http.Response
		if resp, err = hc.Do(req); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			fmt.Printf("status %d %s\n", resp.StatusCode, strings.Join(strings.Fields(string(body)), " "))
			return
		}
	}
	if errors.Is(err, syscall.EACCES) {
		fmt.Println("permission denied")
		return
	}
	fmt.Println("error", err)
}

// TestGuardSocket serves the guard on a real socket shared with the
// group nogroup and connects to it from processes of uid 65534: in the
// group they may read and not write, outside it the socket's mode keeps
// them out, and where the mode would let them in the guard refuses.
func TestGuardSocket(t *testing.T) {
	testenv.RequireRoot(t, "connects to the API socket as another user")
	nogroup, err1 := config.LookupGroup("nogroup")
	daemonGID, err2 := config.LookupGroup("daemon")
	if err := errors.Join(err1, err2); err != nil {
		testenv.Unavailable(t, "needs the groups nogroup and daemon: %v", err)
	}
	dir := testenv.SharedTempDir(t)
	sock := filepath.Join(dir, "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	access, err := NewAccess("nogroup")
	if err != nil {
		t.Fatal(err)
	}
	if err := access.Share(sock, quiet); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if mode, gid := st.Mode().Perm(), st.Sys().(*syscall.Stat_t).Gid; mode != 0o660 || gid != nogroup {
		t.Errorf("socket mode %o, group %d; want 660 and nogroup (%d)", mode, gid, nogroup)
	}
	srv := &http.Server{Handler: access.Guard(okHandler, quiet), ConnContext: ConnContext}
	go srv.Serve(ln)
	defer srv.Close()

	helper := copyTestBinary(t, dir)
	run := func(cred *syscall.Credential, method string) string {
		cmd := exec.Command(helper, "-test.run=^TestPeerHelperProcess$")
		cmd.Env = []string{peerHelperEnv + "=" + sock + " " + method}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helper: %v: %s", err, out)
		}
		line, _, _ := strings.Cut(string(out), "\n")
		return line
	}
	inGroup := &syscall.Credential{Uid: 65534, Gid: nogroup}
	bySupplementary := &syscall.Credential{Uid: 65534, Gid: daemonGID, Groups: []uint32{nogroup}}
	outside := &syscall.Credential{Uid: 65534, Gid: daemonGID}
	for _, tc := range []struct {
		name   string
		cred   *syscall.Credential
		method string
		open   bool   // socket mode 0666: only the guard decides
		want   string // the helper's first line, or its start
	}{
		{"member reads", inGroup, http.MethodGet, false, "status 200"},
		{"member writes", inGroup, http.MethodPost, false, `status 403 { "error": "forbidden: the read group nogroup may only read (GET); POST needs root" }`},
		{"supplementary member reads", bySupplementary, http.MethodGet, false, "status 200"},
		{"supplementary member deletes", bySupplementary, http.MethodDelete, false, "status 403"},
		{"outsider cannot connect", outside, http.MethodGet, false, "permission denied"},
		{"outsider on an open socket", outside, http.MethodGet, true, "status 403"},
		{"root writes", nil, http.MethodPost, false, "status 200"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mode := os.FileMode(0o660)
			if tc.open {
				mode = 0o666
			}
			if err := os.Chmod(sock, mode); err != nil {
				t.Fatal(err)
			}
			if got := run(tc.cred, tc.method); !strings.HasPrefix(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// copyTestBinary copies the running test binary into dir, where another
// user can run it (the go build directory is root's only).
func copyTestBinary(t *testing.T, dir string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, filepath.Base(self))
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}
