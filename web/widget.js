// <multihead-attention>: one script tag puts the widget in a page (docs/widget.md). The element
// lives in web/widget/; this path is the one pages and the npm package ("multihead/widget") load.
import './widget/widget.js';
