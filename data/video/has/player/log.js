// Shared event log of the player pages: every entry has the wall-clock time (ms since the Unix
// epoch, performance.timeOrigin + performance.now(): the same host clock as the capture).
window.events = [];
function now() { return performance.timeOrigin + performance.now(); }
function log(type, data) { window.events.push(Object.assign({type: type, ts_ms: now()}, data || {})); }
(function () {
  const v = document.getElementById("v");
  for (const t of ["loadstart", "loadedmetadata", "canplay", "play", "playing", "waiting", "stalled", "seeking", "ended", "pause", "resize"])
    v.addEventListener(t, () => log("video_" + t, {t: v.currentTime, width: v.videoWidth, height: v.videoHeight}));
  // the video element's state every 250 ms: position, buffer ahead, shown resolution, frames
  setInterval(() => {
    let ahead = 0;
    for (let i = 0; i < v.buffered.length; i++)
      if (v.buffered.start(i) <= v.currentTime + 0.1 && v.buffered.end(i) > v.currentTime) ahead = v.buffered.end(i) - v.currentTime;
    const q = v.getVideoPlaybackQuality ? v.getVideoPlaybackQuality() : {};
    log("state", {t: v.currentTime, buffer_s: ahead, width: v.videoWidth, height: v.videoHeight, paused: v.paused,
                  ready: v.readyState, frames: q.totalVideoFrames ?? null, dropped: q.droppedVideoFrames ?? null});
  }, 250);
})();
