// The voice studio's page: lists the voices, previews, makes, deletes them and picks the default through the
// server's API (wyoming_chorus/studio/server.py). Every URL is relative: the page works under Home Assistant's
// ingress prefix. Nothing is loaded from elsewhere.
"use strict";

const $ = (id) => document.getElementById(id);
const KINDS = { speaker: "model speaker", design: "designed", clone: "cloned", model: "model" };
const MODEL_TYPES = { base: "Base: clones voices", voice_design: "VoiceDesign: designs voices",
  custom_voice: "CustomVoice: built-in speakers" };
let studio = null; // what GET api/voices said last
let recorded = null; // a recording, as a WAV Blob
// The install's token (server.py puts it in the page): changes and previews carry it, which another site's page
// cannot do (it cannot read this page).
const TOKEN = document.querySelector("meta[name=studio-token]")?.content || "";

function say(text, problem = false) {
  const message = $("message");
  message.textContent = text;
  message.className = problem ? "problem" : "ok";
}

async function call(path, body) {
  // A form (a clip upload) goes as it is, its file streamed; anything else as JSON.
  const form = body instanceof FormData;
  const options = body === undefined ? {} : {
    method: "POST", body: form ? body : JSON.stringify(body),
    headers: form ? { "X-Studio-Token": TOKEN } : { "Content-Type": "application/json", "X-Studio-Token": TOKEN },
  };
  const response = await fetch(path, options);
  const text = await response.text();
  let data;
  try { data = JSON.parse(text); } catch { data = { error: text.trim() }; }
  if (!response.ok) throw new Error(data.error || `${response.status} ${response.statusText}`);
  return data;
}

async function refresh() {
  studio = await call("api/voices");
  render();
}

function element(tag, properties = {}, ...children) {
  const made = Object.assign(document.createElement(tag), properties);
  made.append(...children);
  return made;
}

function render() {
  const model = studio.model;
  $("model").textContent = `Model ${model.name} (${MODEL_TYPES[model.type] || model.type})`
    + (model.random_weights ? ": a test model with random weights, its voices make noise, not speech" : "");
  const rows = studio.voices.map((voice) => {
    const languages = element("select", { title: `Preview language of ${voice.name}` },
      ...voice.languages.map((code) => element("option", { value: code, textContent: code,
        selected: code === voice.preview_language })));
    const play = element("button", { type: "button", className: "quiet", textContent: "▶ Play",
      title: `Hear ${voice.name}`, onclick: () => preview(voice.name, languages.value) });
    const isDefault = element("input", { type: "radio", name: "default", checked: voice.default,
      title: `Make ${voice.name} the default voice`, onchange: () => change("api/default", { name: voice.name }) });
    const remove = voice.studio ? element("button", { type: "button", className: "quiet", textContent: "Delete",
      onclick: () => confirm(`Delete the voice ${voice.name}?`) && change("api/delete", { name: voice.name }) }) : "";
    const row = element("tr", {},
      element("td", {}, element("strong", { textContent: voice.name }), element("br"),
        element("span", { className: "description", textContent: voice.description })),
      element("td", { textContent: KINDS[voice.kind] || voice.kind }),
      element("td", { textContent: voice.languages.join(", ") }),
      element("td", {}, isDefault),
      element("td", { className: "preview" }, languages, " ", play),
      element("td", {}, remove));
    row.dataset.voice = voice.name;
    return row;
  });
  $("voices").tBodies[0].replaceChildren(...rows);
  // A default saved for another model (the model was switched): the server speaks with the first voice instead.
  const stale = studio.stale_default;
  const first = studio.voices[0];
  $("stale-default").hidden = !stale || !first;
  if (stale && first) {
    $("stale-text").textContent = `The saved default voice “${stale}” is not a voice of this model, so rooms that `
      + `name no voice hear ${first.name}. `;
    $("stale-fix").textContent = `Make ${first.name} the default`;
    $("stale-fix").onclick = () => change("api/default", { name: first.name }, $("stale-fix"));
  }
  $("clone-section").hidden = !model.clone;
  $("design-section").hidden = !model.design;
  const none = $("no-making");
  none.hidden = model.clone || model.design;
  none.textContent = "This model cannot make new voices: cloning needs a Base model (engine.model: 0.6b-base or "
    + "1.7b-base), designing a VoiceDesign model (1.7b-design).";
  for (const id of ["clone-language", "design-language"]) {
    const chosen = $(id).value;
    $(id).replaceChildren(element("option", { value: "auto", textContent: "any (told from the text)" }),
      ...model.languages.map((code) => element("option", { value: code, textContent: code })));
    $(id).value = chosen || "auto";
  }
}

function preview(name, language) {
  const player = $("player");
  player.dataset.state = "loading";
  player.src = `api/preview?voice=${encodeURIComponent(name)}&language=${encodeURIComponent(language || "")}`
    + `&token=${encodeURIComponent(TOKEN)}`;
  say(`Playing ${name}…`);
  player.play().catch((error) => say(`The preview could not start (${error.message}); press play.`, true));
}

async function change(path, body, button) {
  if (button) button.disabled = true;
  try {
    const done = await call(path, body);
    say(done.message);
    await refresh();
    return done;
  } catch (error) {
    say(error.message, true);
    await refresh().catch(() => {});
    return null;
  } finally {
    if (button) button.disabled = false;
  }
}

async function makeClone(event) {
  event.preventDefault();
  const clip = recorded || $("clone-file").files[0];
  if (!clip) return say("Choose a clip or record one.", true);
  if (clip.size > studio.limits.max_upload_bytes) {
    return say(`The clip is ${(clip.size / 2 ** 20).toFixed(1)} MB; at most `
      + `${(studio.limits.max_upload_bytes / 2 ** 20).toFixed(0)} MB.`, true);
  }
  say("Checking the clip…");
  const form = new FormData();
  form.append("name", $("clone-name").value);
  form.append("text", $("clone-text").value);
  form.append("voice_only", $("clone-voice-only").checked ? "true" : "false");
  form.append("language", $("clone-language").value);
  form.append("clip", clip, clip.name || "recording.wav");
  const made = await change("api/clone", form, event.submitter);
  if (made) preview(made.name, $("clone-language").value === "auto" ? "" : $("clone-language").value);
}

async function makeDesign(event) {
  event.preventDefault();
  const made = await change("api/design", {
    name: $("design-name").value, instruct: $("design-instruct").value, language: $("design-language").value,
  }, event.submitter);
  if (made) preview(made.name, $("design-language").value === "auto" ? "" : $("design-language").value);
}

// ---- recording: MediaRecorder's compressed audio, decoded by the browser and sent as 16-bit WAV ----------------
let recorder = null;

async function record() {
  if (recorder) return recorder.stop();
  if (!navigator.mediaDevices || !window.MediaRecorder) {
    return say("Recording needs a secure page (https, or this computer) and a browser that records; upload a file "
      + "instead.", true);
  }
  let stream;
  try {
    stream = await navigator.mediaDevices.getUserMedia({ audio: true });
  } catch (error) {
    return say(`The microphone cannot be used (${error.message}).`, true);
  }
  const pieces = [];
  recorder = new MediaRecorder(stream);
  recorder.ondataavailable = (event) => pieces.push(event.data);
  recorder.onstop = async () => {
    stream.getTracks().forEach((track) => track.stop());
    recorder = null;
    $("record").textContent = "Record";
    try {
      recorded = await wavOf(new Blob(pieces, { type: pieces[0] ? pieces[0].type : "" }));
      $("record-state").textContent = `Recorded ${(recorded.seconds).toFixed(1)} s (used instead of a file).`;
    } catch (error) {
      say(`The recording cannot be read (${error.message}).`, true);
    }
  };
  recorder.start();
  recorded = null;
  $("record").textContent = "Stop";
  $("record-state").textContent = "Recording… speak for 5 to 15 seconds.";
}

async function wavOf(blob) {
  const context = new AudioContext();
  let audio;
  try {
    audio = await context.decodeAudioData(await blob.arrayBuffer());
  } finally {
    context.close();
  }
  const length = audio.length;
  const mono = new Float32Array(length);
  for (let channel = 0; channel < audio.numberOfChannels; channel++) {
    const samples = audio.getChannelData(channel);
    for (let i = 0; i < length; i++) mono[i] += samples[i] / audio.numberOfChannels;
  }
  const view = new DataView(new ArrayBuffer(44 + 2 * length));
  const text = (offset, value) => [...value].forEach((c, i) => view.setUint8(offset + i, c.charCodeAt(0)));
  text(0, "RIFF"); view.setUint32(4, 36 + 2 * length, true); text(8, "WAVE");
  text(12, "fmt "); view.setUint32(16, 16, true); view.setUint16(20, 1, true); view.setUint16(22, 1, true);
  view.setUint32(24, audio.sampleRate, true); view.setUint32(28, 2 * audio.sampleRate, true);
  view.setUint16(32, 2, true); view.setUint16(34, 16, true);
  text(36, "data"); view.setUint32(40, 2 * length, true);
  for (let i = 0; i < length; i++) view.setInt16(44 + 2 * i, Math.max(-1, Math.min(1, mono[i])) * 32767, true);
  return Object.assign(new Blob([view.buffer], { type: "audio/wav" }), { seconds: audio.duration });
}

function start() {
  const player = $("player");
  for (const state of ["playing", "ended", "error"]) {
    player.addEventListener(state, () => { player.dataset.state = state; });
  }
  player.addEventListener("ended", () => say("Preview played."));
  player.addEventListener("error", async () => {
    // The element says nothing of why: the server's answer does (a refusal comes before any audio is made).
    const answer = await fetch(player.src).catch(() => null);
    const reason = answer && !answer.ok ? (await answer.json().catch(() => ({}))).error : null;
    say(`The preview could not be played${reason ? `: ${reason}` : "; see the server's log"}.`, true);
  });
  $("clone-form").addEventListener("submit", makeClone);
  $("design-form").addEventListener("submit", makeDesign);
  $("record").addEventListener("click", record);
  $("clone-file").addEventListener("change", () => { recorded = null; $("record-state").textContent = ""; });
  refresh().catch((error) => say(`The voices cannot be listed: ${error.message}`, true));
}

start();
