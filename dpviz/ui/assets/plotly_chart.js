// dpviz chart component (Streamlit components v2, no iframe): one Plotly instance per chart, updated in
// place with Plotly.react when the figure changes, instead of st.plotly_chart's remount (Plotly.newPlot).
const LOADING = "__dpvizPlotlyLoading";

function loadPlotly(src) {
  if (window.Plotly && window.Plotly.react) return Promise.resolve(window.Plotly);
  if (!window[LOADING]) {
    window[LOADING] = new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = src;
      s.async = true;
      s.onload = () => resolve(window.Plotly);
      s.onerror = () => { window[LOADING] = null; reject(new Error("plotly.js did not load from " + src)); };
      document.head.appendChild(s);
    });
  }
  return window[LOADING];
}

export default function (component) {
  const { data, parentElement } = component;
  let div = parentElement.querySelector(":scope > div.dpviz-plot");
  if (!div) {
    div = document.createElement("div");
    div.className = "dpviz-plot";
    div.style.width = "100%";
    parentElement.appendChild(div);
  }
  const seq = (div.__dpvizSeq || 0) + 1;
  div.__dpvizSeq = seq;
  div.dataset.pending = "1";
  const fig = JSON.parse(data.figure);
  loadPlotly(data.src).then((Plotly) => {
    if (div.__dpvizSeq !== seq) return;  // a newer figure arrived while plotly.js was loading
    return Plotly.react(div, fig.data || [], fig.layout || {}, data.config || {});
  }).catch((err) => {
    div.textContent = "This chart could not be drawn: " + err.message;
  }).finally(() => {
    if (div.__dpvizSeq === seq) delete div.dataset.pending;
  });
}
