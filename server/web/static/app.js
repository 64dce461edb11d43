// folio's web page: ask, read the answer with its sources, look at the cited regions on their
// pages, add documents, open a document's own view, extract a file without indexing it.
// Plain ES modules, no build step, nothing from elsewhere.

import { ApiError, apiKey, setKeyPrompt, storeKey } from "./api.js";
import { setupAsk } from "./answer.js";
import { setupExtract } from "./cards.js";
import { setText } from "./dom.js";
import { showDocument } from "./docview.js";
import { setupDocuments } from "./documents.js";
import { onView, route, setupRouter } from "./router.js";
import { setupViewer } from "./viewer.js";

const $ = (id) => document.getElementById(id);

/** Ask a person for the API key in a dialog; resolves with the key, rejects on Cancel. */
function askForKey(message) {
  const dialog = $("key-dialog");
  const input = $("key-input");
  setText($("key-message"), message);
  input.value = "";
  return new Promise((resolve, reject) => {
    const done = () => {
      dialog.removeEventListener("close", done);
      const key = dialog.returnValue === "ok" ? input.value.trim() : "";
      input.value = "";
      if (key) resolve(key);
      else reject(new ApiError(401, "unauthorized", "An API key is needed."));
    };
    dialog.returnValue = "";
    dialog.addEventListener("close", done);
    dialog.showModal();
    input.focus();
  });
}

function setupKey() {
  const dialog = $("key-dialog");
  const forget = $("key-forget");
  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    if ($("key-input").value.trim()) dialog.close("ok");
  });
  $("key-cancel").addEventListener("click", () => dialog.close(""));
  const showForget = () => {
    forget.hidden = !apiKey();
    $("settings-key-forget").hidden = !apiKey();
    setText(
      $("settings-key"),
      apiKey()
        ? "This browser keeps the API key you entered until you forget it here."
        : "This browser keeps no API key: the server asks for one if it needs it.",
    );
  };
  forget.addEventListener("click", () => storeKey(""));
  $("settings-key-forget").addEventListener("click", () => storeKey(""));
  window.addEventListener("folio-key", showForget);
  showForget();
  setKeyPrompt(askForKey);
}

setupKey();
setupViewer();
setupAsk();
setupDocuments();
setupExtract();
onView("document", (params) => showDocument(params.get("doc"), Number(params.get("page")) || 0));
setupRouter();
route();
