// One tagged-template renderer for every view: htm over preact, no build step for templates.
import { h } from 'preact';
import htm from 'htm';

export const html = htm.bind(h);
