//go:build !unix

package checkpoint

// openNoBlock is 0 where there is no O_NONBLOCK: OpenRegular's check before opening
// is the guard there.
const openNoBlock = 0
