// SPDX-License-Identifier: Apache-2.0

package loadbalancer

import "errors"

// ErrNotFound is returned (wrapped) when a service, real, local IP or
// interface named in a call does not exist.
var ErrNotFound = errors.New("not found")

// ErrExists is returned (wrapped) when an object to add already exists.
var ErrExists = errors.New("already exists")
