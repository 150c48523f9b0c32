import React from 'react';
import { createRoot } from 'react-dom/client';
import '@patternfly/react-core/dist/styles/base.css';
import './app.css';
import { App } from './App';
import { prefetch } from './api';

// The overview's data is read while the session is checked, not after.
if (window.location.pathname === '/') prefetch('/api/overview');

createRoot(document.getElementById('root')!).render(
  <React.StrictMode>
    <App />
  </React.StrictMode>,
);
