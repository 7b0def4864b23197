// SPDX-License-Identifier: Apache-2.0

package config

import (
	"strings"
	"testing"
)

func TestExpandRange(t *testing.T) {
	for _, tc := range []struct {
		have    string
		want    string // the addresses, space separated
		isRange bool
		err     string
	}{
		{"10.0.3.1", "", false, ""},
		{"10.0.3.100-103", "10.0.3.100 10.0.3.101 10.0.3.102 10.0.3.103", true, ""},
		{"10.0.3.255-255", "10.0.3.255", true, ""},
		{"2001:db8::fe-101", "2001:db8::fe 2001:db8::ff 2001:db8::100 2001:db8::101", true, ""},
		{"2001:db8::1-0", "", true, "ends below its first address"},
		{"2001:db8::1-zz", "", true, `"zz" is not the last group (hex, 0-ffff)`},
		{"2001:db8::0-ffff", "", true, "65536 addresses; a range has at most 4096"},
		{"10.0.3.1-", "", true, `"" is not the last octet`},
		{"-5", "", true, `"" is not an IP address`},
	} {
		got, isRange, err := expandRange(tc.have)
		if isRange != tc.isRange || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) ||
			strings.Join(got, " ") != tc.want {
			t.Errorf("expandRange(%q) = %v, %v, %v; want %q, %v, error with %q", tc.have, got, isRange, err, tc.want, tc.isRange, tc.err)
		}
	}
}
