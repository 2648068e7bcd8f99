// The owner's page: the only script it runs (served by the process; no inline script is
// allowed by its Content-Security-Policy). Everything it puts on the page goes in as
// text (textContent), never as HTML.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  for (const button of document.querySelectorAll("button[data-copy]")) {
    button.addEventListener("click", () => {
      const source = document.getElementById(button.dataset.copy);
      if (!source) return;
      navigator.clipboard.writeText(source.textContent).then(
        () => { button.textContent = "Copied"; },
        () => { button.textContent = "Select and copy"; });
    });
  }
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  }
});
