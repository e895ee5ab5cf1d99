package main

import (
	"io"
	"mime/multipart"
	"path/filepath"
)

// multipartFile streams r as a multipart form whose one field "file" is
// named name (its base name): the body to send, read as the request goes,
// and its Content-Type. viewer upload and upload-debuginfo send files so.
// With a meter, the bytes of r sent (of size; 0 when unknown) are shown
// as phase "sending". Closing the body stops the copy.
func multipartFile(name string, r io.Reader, size int64, m *phaseMeter) (io.ReadCloser, string) {
	if m != nil {
		r = &countingReader{r: r, m: m, phase: "sending", total: size}
	}
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		fw, err := mw.CreateFormFile("file", filepath.Base(name))
		if err == nil {
			_, err = io.Copy(fw, r)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr, mw.FormDataContentType()
}
