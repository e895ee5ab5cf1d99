package profiles

import (
	"errors"
	"fmt"
)

// ErrNotFound is matched (errors.Is) by a *NotFoundError: no profile has the
// ID. The web layer answers it with 404. Errors of bad input come from
// web/ingest (ingest.ErrTooLarge, ErrCorrupt, ErrBusy ...) and are returned
// wrapped, for the web layer to map the same way.
var ErrNotFound = errors.New("profile not found")

// NotFoundError names the ID no profile has.
type NotFoundError struct{ ID string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("No profile has the ID %q. Check the link, or upload the profile again.", e.ID)
}

func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

func notFound(id string) error { return &NotFoundError{ID: id} }
