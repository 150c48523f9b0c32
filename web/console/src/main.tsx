import React from 'react';
import { createRoot } from 'react-dom/client';
import '@patternfly/react-core/dist/styles/base.css';
import './app.css';
import { App } from './App';
import { prefetch } from './api';

// The session is checked, and the overview's data read, as soon as the
// script runs: not after the first render, which waits for the styles.
prefetch('/api/session');
if (window.location.pathname === '/') prefetch('/api/overview');

createRoot(document.getElementById('root')!).render(
  <React.StrictMode>
    <App />
  </React.StrictMode>,
);
