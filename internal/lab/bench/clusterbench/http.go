// SPDX-License-Identifier: Apache-2.0

package clusterbench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
)

// streamConn is a keep-alive HTTP/1.1 connection to the lab's servers
// (topo.Serve), spoken by hand: the socket was made in the client's
// namespace, which http.Client's own dialing would not be.
type streamConn struct {
	conn net.Conn
	r    *bufio.Reader
}

// errTrialOver ends a stream cut by the trial's end.
var errTrialOver = errors.New("the trial is over")

func (s *streamConn) request(path string) (*http.Response, error) {
	if s.r == nil {
		s.r = bufio.NewReaderSize(s.conn, 256<<10)
	}
	if _, err := io.WriteString(s.conn, "GET "+path+" HTTP/1.1\r\nHost: xlb\r\n\r\n"); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(s.r, nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return resp, nil
}

// get fetches path and returns its body.
func (s *streamConn) get(path string) (string, error) {
	resp, err := s.request(path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(b)), err
}

// stream asks for n bytes of the stream and counts what arrives before
// deadline; it returns errTrialOver when the deadline cut it.
func (s *streamConn) stream(n int, deadline time.Time) (int64, error) {
	resp, err := s.request(fmt.Sprintf("/stream?bytes=%d", n))
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) || time.Now().After(deadline) {
			return 0, errTrialOver
		}
		return 0, err
	}
	defer resp.Body.Close()
	buf := make([]byte, 256<<10)
	var got int64
	for {
		k, err := resp.Body.Read(buf)
		got += int64(k)
		if errors.Is(err, io.EOF) {
			return got, nil
		}
		if time.Now().After(deadline) {
			return got, errTrialOver
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return got, errTrialOver
			}
			return got, err
		}
	}
}

func execOutput(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).Output()
	return string(out), err
}
