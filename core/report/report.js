(function () {
  "use strict";
  var root = document.getElementById("main"), q = document.getElementById("q"), qn = document.getElementById("qn");
  var hits = [], cur = -1, timer = null, MAX = 3000;
  function clear() {
    var marks = root.querySelectorAll("mark.hit"), parents = [];
    for (var i = 0; i < marks.length; i++) {
      var m = marks[i], p = m.parentNode;
      p.replaceChild(document.createTextNode(m.textContent), m);
      if (parents.indexOf(p) < 0) parents.push(p);
    }
    for (var j = 0; j < parents.length; j++) parents[j].normalize();
    hits = []; cur = -1;
  }
  function openAncestors(n) {
    for (var e = n.parentNode; e && e !== root; e = e.parentNode) if (e.tagName === "DETAILS") e.open = true;
  }
  function search(term) {
    clear();
    document.body.setAttribute("data-query", term);
    if (term.length < 2) { qn.textContent = ""; document.body.setAttribute("data-hits", "0"); return; }
    var re = new RegExp(term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "gi");
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {acceptNode: function (n) {
      var p = n.parentNode;
      if (!p || p.closest("script,style,svg,.pv")) return NodeFilter.FILTER_REJECT;
      re.lastIndex = 0;
      return re.test(n.nodeValue) ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_REJECT;
    }});
    var nodes = [], capped = false;
    while (walker.nextNode()) nodes.push(walker.currentNode);
    for (var i = 0; i < nodes.length && !capped; i++) {
      var node = nodes[i], text = node.nodeValue, last = 0, frag = document.createDocumentFragment(), m;
      re.lastIndex = 0;
      while ((m = re.exec(text)) !== null) {
        if (m[0].length === 0) { re.lastIndex++; continue; }
        if (hits.length >= MAX) { capped = true; break; }
        frag.appendChild(document.createTextNode(text.slice(last, m.index)));
        var mk = document.createElement("mark");
        mk.className = "hit"; mk.textContent = m[0];
        frag.appendChild(mk); hits.push(mk);
        last = m.index + m[0].length;
      }
      frag.appendChild(document.createTextNode(text.slice(last)));
      node.parentNode.replaceChild(frag, node);
    }
    for (var k = 0; k < hits.length; k++) openAncestors(hits[k]);
    document.body.setAttribute("data-hits", String(hits.length));
    if (!hits.length) { qn.textContent = "no match"; return; }
    go(0, capped);
  }
  function go(i, capped) {
    if (!hits.length) return;
    if (cur >= 0 && hits[cur]) hits[cur].classList.remove("cur");
    cur = (i + hits.length) % hits.length;
    hits[cur].classList.add("cur");
    openAncestors(hits[cur]);
    hits[cur].scrollIntoView({block: "center"});
    qn.textContent = (cur + 1) + " / " + hits.length + (capped || hits.length >= MAX ? "+" : "");
  }
  q.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(function () { search(q.value); }, 180);
  });
  q.addEventListener("keydown", function (e) {
    if (e.key === "Enter") { e.preventDefault(); clearTimeout(timer);
      if (document.body.getAttribute("data-query") !== q.value) search(q.value); else go(cur + (e.shiftKey ? -1 : 1)); }
    else if (e.key === "Escape") { q.value = ""; search(""); q.blur(); }
  });
  document.addEventListener("keydown", function (e) {
    if (e.key === "/" && document.activeElement !== q) { e.preventDefault(); q.focus(); q.select(); }
  });
  function all(open) {
    var ds = document.querySelectorAll("details");
    for (var i = 0; i < ds.length; i++) ds[i].open = open;
  }
  document.getElementById("expand").addEventListener("click", function () { all(true); });
  document.getElementById("collapse").addEventListener("click", function () { all(false); });
  var closed = [];
  window.addEventListener("beforeprint", function () {
    closed = Array.prototype.filter.call(document.querySelectorAll("details"), function (d) { return !d.open; });
    for (var i = 0; i < closed.length; i++) closed[i].open = true;
  });
  window.addEventListener("afterprint", function () {
    for (var i = 0; i < closed.length; i++) closed[i].open = false;
    closed = [];
  });
  var h = location.hash;
  if (h.indexOf("#q=") === 0) { q.value = decodeURIComponent(h.slice(3)); search(q.value); }
  document.body.setAttribute("data-ready", "1");
})();
