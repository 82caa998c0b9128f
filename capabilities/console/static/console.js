// Roundtable console: live updates from the event stream. No framework, no build step.
// A page that wants them marks <main data-live data-after="N" [data-proposal=P] [data-memory=M]>.
"use strict";

(function () {
  const main = document.querySelector("main[data-live]");
  if (!main || !window.EventSource) {
    return;
  }
  const list = document.getElementById("live-events");
  const status = document.getElementById("live-status");
  const params = new URLSearchParams();
  if (main.dataset.after) {
    params.set("after", main.dataset.after);
  }
  if (main.dataset.proposal) {
    params.set("proposal_id", main.dataset.proposal);
  }
  const source = new EventSource("/console/events/stream?" + params.toString());
  let seen = 0;

  function say(text) {
    if (status) {
      status.textContent = text;
    }
  }

  function announce(event) {
    seen += 1;
    if (list) {
      const item = document.createElement("li");
      item.className = "live-event";
      item.dataset.eventId = String(event.id);
      const when = document.createElement("time");
      when.dateTime = event.created_at;
      when.textContent = event.created_at;
      item.append(when, " " + event.type + " by " + event.actor);
      list.append(item);
    }
    const reload = seen === 1 ? "1 new event" : seen + " new events";
    say(reload + " since this page loaded. Reload to see them in place.");
  }

  source.onopen = function () {
    say("Live: new events appear here.");
  };
  source.onmessage = function (message) {
    let event;
    try {
      event = JSON.parse(message.data);
    } catch (error) {
      return;
    }
    if (main.dataset.memory) {
      const payload = event.payload || {};
      if (payload.memory_id !== main.dataset.memory && payload.canonical_id !== main.dataset.memory) {
        return;
      }
    }
    announce(event);
  };
  source.onerror = function () {
    say("Reconnecting to the live stream…");
  };
})();
