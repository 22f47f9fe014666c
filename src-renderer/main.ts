import './styles/base.css';
import './charts/setup';

import { createPinia } from 'pinia';
import { createApp } from 'vue';

import App from './App.vue';
import { createAppRouter } from './router';
import { ApiClient } from './transport/api-client';
import { setApiClient } from './transport/client-instance';
import { createTransport } from './transport/create-transport';

setApiClient(new ApiClient(createTransport()));
createApp(App).use(createPinia()).use(createAppRouter()).mount('#app');
