// uploadchoice.js: the upload page's "don't send this profile's build IDs"
// checkbox. It adds ?debuginfod=0 to both ways of uploading (the form's
// action and the drop zone's API URL); the server records the choice with
// the profile and symbolizes it from local debug info only.

const box = /** @type {HTMLInputElement} */ (document.getElementById('no-debuginfod'));
const form = document.getElementById('upload-form');
if (box && form) {
  const action = form.getAttribute('action');
  const api = form.dataset.api;
  const apply = () => {
    const q = box.checked ? '?debuginfod=0' : '';
    form.setAttribute('action', action + q);
    if (api) form.dataset.api = api + q;
  };
  box.addEventListener('change', apply);
  apply();
}
