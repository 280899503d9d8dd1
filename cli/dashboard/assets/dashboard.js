// The dashboard's only script: live refresh. It reads the page it is on again every
// `data-refresh-ms` and swaps in its <main> when it changed. The page works without it (the
// action buttons are plain forms, confirmed on a page of their own). Same origin only: it sends
// no data and runs no text it reads as markup other than the server's own escaped page.

(() => {
  // A page without it (a confirmation, an error) stays as it is.
  const interval = Number(document.body.dataset.refreshMs);
  if (!interval) return;
  const live = () => document.getElementById("live");
  let busy = false;
  async function refresh() {
    if (busy || document.hidden) return;
    busy = true;
    try {
      const response = await fetch(location.pathname, {
        headers: { accept: "text/html" },
        credentials: "same-origin",
        cache: "no-store",
      });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const next = new DOMParser().parseFromString(await response.text(), "text/html");
      const fresh = next.getElementById("view");
      const current = document.getElementById("view");
      if (fresh && current && fresh.innerHTML !== current.innerHTML) {
        // Keep what a person opened (a measurements list) open across the swap.
        const open = new Set(
          [...current.querySelectorAll("details[open]")].map(
            (d) => d.closest("[data-metric]")?.dataset.metric,
          ),
        );
        current.replaceWith(fresh);
        for (const d of fresh.querySelectorAll("details")) {
          if (open.has(d.closest("[data-metric]")?.dataset.metric)) d.open = true;
        }
      }
      const footer = next.querySelector("footer");
      const shown = document.querySelector("footer");
      if (footer && shown) shown.replaceWith(footer);
      document.body.dataset.refreshed = String(Date.now());
    } catch (error) {
      const mark = live();
      if (mark) mark.textContent = `refresh failed (${error.message}); retrying`;
    } finally {
      busy = false;
    }
  }
  // Notices ("promoted") are shown once: the refreshed page is the plain URL.
  if (location.search) history.replaceState(null, "", location.pathname);
  setInterval(refresh, interval);
})();
