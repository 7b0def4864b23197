// SPDX-License-Identifier: Apache-2.0

package clusterbench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/topo"
)

// streamConn is a keep-alive connection to the lab's servers.
type streamConn struct{ *topo.HTTPConn }

// errTrialOver ends a stream cut by the trial's end.
var errTrialOver = errors.New("the trial is over")

// stream asks for n bytes of the stream and counts what arrives before
// deadline; it returns errTrialOver when the deadline cut it.
func (s *streamConn) stream(n int, deadline time.Time) (int64, error) {
	resp, err := s.Request(fmt.Sprintf("/stream?bytes=%d", n))
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
