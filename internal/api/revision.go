// SPDX-License-Identifier: Apache-2.0

package api

import (
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/xlb-dev/xlb/internal/config"
)

// Revisions: the daemon numbers the configurations it holds, from 1 at
// its start, and counts one up whenever the configuration in force
// changes (an apply, an edit, a SIGHUP reload). GET /v1/config sends the
// revision as its ETag ("7"); a write with If-Match: "7" is made only if
// the configuration is still at revision 7, else it is refused with 412
// and nothing changes. So a client that reads, edits and writes back the
// whole configuration (xlb ipvsadm -R, -C, --set) cannot lose a change
// someone made in between: it reads again and redoes its edit.

// StaleError is a write's error when its If-Match names a revision that
// is not the one in force: the daemon answers 412 Precondition Failed.
type StaleError struct {
	Want    uint64 // the revision the write was made against
	Current uint64 // the revision in force
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("If-Match: the configuration is at revision %d, not %d: it changed since it was read; nothing changed (read it again and redo the change)",
		e.Current, e.Want)
}

// RevisionCounter numbers a Backend's configurations. The zero value is
// at revision 1. It has no lock of its own: a Backend uses it under the
// lock its writes hold.
type RevisionCounter struct {
	changes uint64
}

// Current returns the revision in force.
func (c *RevisionCounter) Current() uint64 { return c.changes + 1 }

// Check returns a *StaleError when want is not 0 (a write without
// If-Match) and not the revision in force.
func (c *RevisionCounter) Check(want uint64) error {
	if want != 0 && want != c.Current() {
		return &StaleError{Want: want, Current: c.Current()}
	}
	return nil
}

// Applied counts a change when the configuration in force went from
// before to after and they differ.
func (c *RevisionCounter) Applied(before, after *config.Config) {
	if !reflect.DeepEqual(before, after) {
		c.changes++
	}
}

// ETag is the entity tag of a revision: the number in double quotes.
func ETag(rev uint64) string { return `"` + strconv.FormatUint(rev, 10) + `"` }

// ifMatch reads a request's If-Match header: the revision it names, or 0
// when there is none or it is "*" (any revision). A list of several
// tags, a weak tag, revision 0 (revisions start at 1) or anything but a
// revision in double quotes is a 400.
func ifMatch(r *http.Request) (uint64, error) {
	values := r.Header.Values("If-Match")
	if len(values) == 0 {
		return 0, nil
	}
	v := strings.TrimSpace(strings.Join(values, ","))
	switch {
	case v == "*":
		return 0, nil
	case strings.Contains(v, ","):
		return 0, badRequest("If-Match %s: give one revision, the ETag of GET /v1/config", v)
	case strings.HasPrefix(v, "W/"):
		return 0, badRequest("If-Match %s: a weak entity tag never matches; give the ETag of GET /v1/config", v)
	}
	num, quoted := strings.CutPrefix(v, `"`)
	num, closed := strings.CutSuffix(num, `"`)
	rev, err := strconv.ParseUint(num, 10, 64)
	if !quoted || !closed || err != nil || rev == 0 {
		return 0, badRequest(`If-Match %s: want a revision from 1 up in double quotes, as the ETag of GET /v1/config ("7")`, v)
	}
	return rev, nil
}
